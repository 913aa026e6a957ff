# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""Victim selection speed: OPIE's exact search against brute force.

For k preemptibles per host (a mix of six flavor sizes, random run times,
hosts full so every request needs victims), prints the median and p99 time
of one selection (costs included), brute force (the literal Algorithm 5
over all 2^k subsets) beside it where k <= 20 with the speed-up, and the
time to rank 1000 such hosts with 20 preemptibles each. Then the same
selection with every hard constraint on: three tiers, a minimum uptime on a
third of the instances, and four projects whose budgets bind (each may lose
between a third and all of what its instances on the host would charge),
checked against brute force where k <= 16. Figures are measured in this
run; the goals from the issues are printed next to them.

    python benchmarks/victims.py [--seed N] [--samples N]
"""
import argparse
import datetime
import random
import statistics
import time

from opie.core import budgets as budgets_mod
from opie.core import costs
from opie.core import host as host_mod
from opie.core import resources as res
from opie.core import scheduling
from opie.core import victims

NOW = datetime.datetime(2026, 1, 15, 12, tzinfo=datetime.timezone.utc)
FLAVORS = [res.Resources(1, 2048, 20), res.Resources(2, 4096, 40),
           res.Resources(4, 8192, 80), res.Resources(8, 16384, 160),
           res.Resources(2, 8192, 40), res.Resources(4, 4096, 40)]
MODEL = costs.load_cost_model('period')


PROJECTS = ('p0', 'p1', 'p2', 'p3')
DAY = 86400.0


def full_host(rng, name, k, terms=False):
    """A host exactly full of k preemptibles of random flavors; with
    ``terms``, of random tiers, projects and minimum uptimes."""
    instances = [host_mod.Instance(
        uuid='%s-%d' % (name, n), resources=rng.choice(FLAVORS),
        preemptible=True,
        launched_at=NOW - datetime.timedelta(seconds=rng.randint(60, 86400)),
        **(dict(tier=rng.randint(0, 2), project_id=rng.choice(PROJECTS),
                minimum_uptime=rng.choice([0, 0, 3600 * 6]))
           if terms else {}))
        for n in range(k)]
    capacity = res.total(i.resources for i in instances)
    return host_mod.Host.from_instances(name, capacity, instances)


def binding_budgets(rng, host):
    """Budgets of which each allows a third to all of what the project's
    instances on ``host`` would charge together."""
    charged = {}
    for instance in host.preemptibles:
        charged[instance.project_id] = charged.get(
            instance.project_id, 0) + budgets_mod.charge(instance, NOW, DAY)
    return budgets_mod.Budgets(DAY, {
        project: int(total * rng.uniform(0.33, 1.0))
        for project, total in charged.items()})


def one_selection(host, request, select, limits=None):
    instances = host.preemptibles
    prices = MODEL.costs(instances, host, NOW)
    return select(host.free_full.shortfall(request), instances, prices,
                  None, host.capacity, NOW, limits)


def timed(fn, *args):
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def percentile(samples, q):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_selection(rng, k, samples, brute_samples):
    cases = [(full_host(rng, 'h', k), rng.choice(FLAVORS))
             for _ in range(samples)]
    fast = [timed(one_selection, h, r, victims.select) for h, r in cases]
    row = {'k': k, 'median_ms': statistics.median(fast) * 1e3,
           'p99_ms': percentile(fast, 0.99) * 1e3}
    if brute_samples:
        chosen = cases[:brute_samples]
        for h, r in chosen:     # same answer, or the comparison is void
            a = one_selection(h, r, victims.select)
            b = one_selection(h, r, victims.brute_force)
            assert abs(a.cost - b.cost) < 1e-6, (a, b)
        slow = [timed(one_selection, h, r, victims.brute_force)
                for h, r in chosen]
        fast_same = [timed(one_selection, h, r, victims.select)
                     for h, r in chosen]
        row['brute_median_ms'] = statistics.median(slow) * 1e3
        row['speedup'] = statistics.median(slow) / statistics.median(
            fast_same)
    return row


def bench_terms(rng, k, samples, brute_samples):
    """Selection with tiers, minimum uptimes and binding budgets."""
    cases = []
    for _ in range(samples):
        host = full_host(rng, 'h', k, terms=True)
        cases.append((host, rng.choice(FLAVORS), binding_budgets(rng, host)))
    fast = [timed(one_selection, h, r, victims.select, b)
            for h, r, b in cases]
    found = sum(one_selection(h, r, victims.select, b) is not None
                for h, r, b in cases)
    for h, r, b in cases[:brute_samples]:
        a = one_selection(h, r, victims.select, b)
        b = one_selection(h, r, victims.brute_force, b)
        assert (a is None) == (b is None) and (a is None or (
            a.tier == b.tier and abs(a.cost - b.cost) < 1e-6)), (a, b)
    return {'k': k, 'median_ms': statistics.median(fast) * 1e3,
            'p99_ms': percentile(fast, 0.99) * 1e3, 'found': found,
            'checked': min(brute_samples, samples)}


def bench_ranking(rng, hosts, k, repeats):
    cloud = [full_host(rng, 'host-%04d' % n, k) for n in range(hosts)]
    request = scheduling.Request(FLAVORS[1])
    times = [timed(scheduling.schedule, request, cloud, MODEL, NOW)
             for _ in range(repeats)]
    return statistics.median(times) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seed', type=int, default=42)
    parser.add_argument('--samples', type=int, default=300,
                        help='selections timed per k (default 300)')
    parser.add_argument('--brute-samples', type=int, default=3,
                        help='brute-force runs at k=20 (each takes '
                        'seconds; default 3)')
    args = parser.parse_args()
    rng = random.Random(args.seed)

    print('Victim selection, one host full of k preemptibles '
          '(6 flavor sizes), period cost, %d samples per k' % args.samples)
    print('%4s %12s %10s %16s %10s' % ('k', 'median ms', 'p99 ms',
                                       'brute median ms', 'speed-up'))
    for k in (8, 16, 20, 32, 64):
        brute = args.brute_samples if k == 20 else (
            min(args.samples, 30) if k <= 16 else 0)
        row = bench_selection(rng, k, args.samples, brute)
        print('%4d %12.3f %10.3f %16s %10s' % (
            k, row['median_ms'], row['p99_ms'],
            '%.1f' % row['brute_median_ms'] if 'brute_median_ms' in row
            else '-',
            '%.0fx' % row['speedup'] if 'speedup' in row else '-'))
        if k == 64:
            k64 = row
        if k == 20:
            k20 = row
    print()
    print('The same with tiers (3), minimum uptimes and binding budgets '
          '(4 projects), %d samples per k' % args.samples)
    print('%4s %12s %10s %14s %18s' % ('k', 'median ms', 'p99 ms',
                                       'sets found', 'brute-force equal'))
    for k in (8, 16, 20, 32, 64):
        row = bench_terms(rng, k, args.samples,
                          min(args.samples, 30) if k <= 16 else 0)
        print('%4d %12.3f %10.3f %14s %18s' % (
            k, row['median_ms'], row['p99_ms'],
            '%d/%d' % (row['found'], args.samples),
            '%d/%d' % (row['checked'], row['checked']) if row['checked']
            else '-'))
        terms64 = row
    rank_ms = bench_ranking(rng, 1000, 20, 5)
    print('Ranking 1000 full hosts with 20 preemptibles each: %.1f ms '
          '(median of 5)' % rank_ms)
    print()
    print('Goals: k=64 median %.3f ms (< 2), p99 %.3f ms (< 20); ranking '
          '%.1f ms (< 100); k=20 speed-up %.0fx (>= 100); with tiers, '
          'minimum uptimes and budgets k=64 median %.3f ms (< 2)' % (
              k64['median_ms'], k64['p99_ms'], rank_ms, k20['speedup'],
              terms64['median_ms']))


if __name__ == '__main__':
    main()
