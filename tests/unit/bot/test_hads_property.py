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

"""HADS' guarantees over generated jobs, scenarios and adversaries.

Jobs are drawn from a seeded generator: random flavor menus (a fast
flavor offered only as preemptible, preemptible prices above normal ones,
limits that bind, tasks whose memory fits only some flavors, run times
that do not follow the flavors' speed) and every
Dspot rule, numeric ones past D included.  Each job runs under the HADS
Table 8 scenarios and under adversarial traces aimed at the executor's
weak moments: every flavor lost just before Dspot, a resume one second
before mtt followed by a second loss, and random bursts.  The properties
(doc: tenant/ambiguities, "The deadline guarantee"):

* every task runs to completion exactly once;
* the normal-only baseline keeps to the job's own limits;
* every run meets D whenever the normal-only baseline within the job's
  limits meets it;
* without preemption, a job whose preemptible prices are all below the
  normal ones costs no more than that baseline.

The default size suits CI; ``OPIE_HADS_PROPERTY_JOBS=2000`` runs a larger
variant.
"""
import collections
import dataclasses
import functools
import json
import math
import os
import random

import pytest

from opie.bot.hads import job_map
from opie.bot.sim import map_choice
from opie.bot.job import model
from opie.bot.sim import scenarios
from opie.bot.sim import backend
from opie.bot.sim import preemption

JOBS = int(os.environ.get('OPIE_HADS_PROPERTY_JOBS', '200'))
SEEDS = 2
SCENARIOS = tuple(scenarios.TABLE8.values())


def _flavors(rng):
    flavors = []
    for k in range(rng.randint(2, 4)):
        vcpus = rng.choice((1, 2, 4))
        normal = round(rng.uniform(0.05, 0.3), 4)
        spot = normal * rng.uniform(0.2, 0.6)
        if rng.random() < 0.15:
            spot = normal * rng.uniform(1.05, 1.6)
        flavors.append(model.Flavor(
            name='f%d' % k, vcpus=vcpus,
            ram_mb=1024.0 * rng.choice((2, 4, 8, 16)),
            gflops=vcpus * rng.uniform(10.0, 40.0),
            price_h={model.PREEMPTIBLE: round(spot, 4),
                     model.NORMAL: normal},
            limits={model.PREEMPTIBLE: rng.randint(1, 5),
                    model.NORMAL: rng.choice((0, 1, 2, 5))}))
    if rng.random() < 0.4:
        # A fast flavor nobody may run as normal.
        vcpus = rng.choice((2, 4))
        flavors.append(model.Flavor(
            name='fast', vcpus=vcpus, ram_mb=1024.0 * 8,
            gflops=vcpus * 80.0,
            price_h={model.PREEMPTIBLE: 0.05, model.NORMAL: 0.2},
            limits={model.PREEMPTIBLE: 5, model.NORMAL: 0}))
    # At least one flavor a normal server may use, big enough for all.
    big = flavors[0]
    flavors[0] = model.Flavor(
        name=big.name, vcpus=big.vcpus, ram_mb=16384.0, gflops=big.gflops,
        price_h=big.price_h,
        limits={model.PREEMPTIBLE: big.limits[model.PREEMPTIBLE],
                model.NORMAL: max(1, big.limits[model.NORMAL])})
    return {f.name: f for f in flavors}


def _tasks(rng, flavors):
    # A job file may give each task any run time per flavor: in a quarter
    # of the jobs they do not follow the flavors' speed at all.
    unrelated = rng.random() < 0.25
    tasks = []
    for i in range(rng.randint(4, 40)):
        ref = rng.uniform(100.0, 600.0)
        memory = rng.uniform(50.0, 500.0)
        if rng.random() < 0.1:
            memory = rng.uniform(3000.0, 14336.0)
        tasks.append(model.Task(
            id='t%02d' % i, command='', memory_mb=memory,
            runtime_s={f.name: (rng.uniform(50.0, 900.0) if unrelated
                                else ref * 20.0 / f.gflops_per_vcpu)
                       for f in flavors.values()}))
    return tuple(tasks)


def _deadline(rng, flavors, tasks, alpha):
    """A deadline from tight to loose for the job's normal capacity."""
    normal = [f for f in flavors.values() if f.limits[model.NORMAL]]
    fastest = min(normal, key=lambda f: tasks[0].runtime_on(f))
    work = sum(t.runtime_on(fastest) for t in tasks)
    slots = sum(f.vcpus * f.limits[model.NORMAL] for f in normal)
    longest = max(t.runtime_on(fastest) for t in tasks)
    return round(alpha + max(longest, work / slots) * rng.uniform(1.1, 4.0))


def generate(index):
    rng = random.Random('hads-property/%d' % index)
    flavors = _flavors(rng)
    tasks = _tasks(rng, flavors)
    alpha = rng.choice((60.0, 180.0))
    deadline = _deadline(rng, flavors, tasks, alpha)
    dspot = rng.choice(('paper', 'paper', 'code', 'number'))
    if dspot == 'number':
        dspot = round(deadline * rng.uniform(0.3, 1.5))
    policy = model.Policy(ac_s=rng.choice((300.0, 900.0)), alpha_s=alpha,
                          max_normal=rng.choice((1, 2, 3, 5, 20)),
                          dspot=dspot)
    return model.Job(name='gen%d' % index, deadline_s=float(deadline),
                     policy=policy, flavors=flavors, tasks=tasks)


def _events(result, name):
    return [r for r in result.records if r['event'] == name]


def _all_flavors(job, time_s, event):
    return [preemption.TraceEvent(time_s, name, event)
            for name in sorted(job.flavors)]


def adversaries(plan, rng):
    """Traces aimed at Dspot, at mtt and at the executor's bookkeeping."""
    job = plan.job
    late = max(plan.dspot - 1.0, 0.0)
    yield 'lost-before-dspot', _all_flavors(job, late, preemption.HIBERNATE)
    yield 'killed-before-dspot', _all_flavors(job, late,
                                              preemption.TERMINATE)
    early = rng.uniform(0.0, max(plan.dspot, 1.0))
    first = _all_flavors(job, early, preemption.HIBERNATE)
    # A server no other can relieve has no mtt: it migrates at once.
    mtts = [early if r['mtt'] is None else r['mtt']
            for r in _events(backend.run(plan, trace=first), 'mtt')]
    if mtts:
        back = max(min(mtts) - 1.0, early)
        yield 'resume-before-mtt', first + _all_flavors(
            job, back, preemption.RESUME) + _all_flavors(
            job, back + rng.uniform(1.0, job.deadline_s / 3),
            preemption.HIBERNATE)
    burst = []
    for name in sorted(job.flavors):
        t = rng.uniform(0.0, job.deadline_s * 0.6)
        for _ in range(rng.randint(1, 3)):
            burst.append(preemption.TraceEvent(t, name, preemption.HIBERNATE))
            t += rng.uniform(10.0, job.deadline_s / 4)
            burst.append(preemption.TraceEvent(t, name, preemption.RESUME))
            t += rng.uniform(10.0, job.deadline_s / 4)
    yield 'burst', burst


def runs(plan, rng):
    """(label, simulated result) for every scenario, seed and adversary."""
    yield 'none', backend.run(plan)
    for sc in SCENARIOS:
        for seed in range(SEEDS):
            yield '%s/%d' % (sc.name, seed), backend.run(
                plan, kh=sc.kh, kr=sc.kr, seed=seed)
    yield 'sc2/terminate', backend.run(plan, kh=5.0, seed=0,
                                       mode=preemption.TERMINATE)
    for label, trace in adversaries(plan, rng):
        yield label, backend.run(plan, trace=trace)


def _strict_json(records):
    """True if any JSON reader reads the journal: no NaN, no infinity."""
    try:
        json.dumps(records, allow_nan=False)
    except ValueError:
        return False
    return True


def finishes(result):
    return collections.Counter(r['task'] for r in _events(result,
                                                          'task_finish'))


def makespan(result):
    done = _events(result, 'done')
    return done[0]['t'] if done else None


def cost(result):
    return sum(b['cost'] for b in result.bill)


@functools.lru_cache(maxsize=None)
def check_job(index):
    """Every broken property of job ``index``, and the run figures."""
    job = generate(index)
    rng = random.Random('hads-adversary/%d' % index)
    plan = map_choice.primary_map(job)
    base_plan = job_map.normal_only(plan)
    base = backend.run(base_plan)
    base_meets = (makespan(base) is not None
                  and makespan(base) <= job.deadline_s)
    cheap = all(f.price_h[model.PREEMPTIBLE] < f.price_h[model.NORMAL]
                for f in job.flavors.values())
    problems = []
    if not job_map.within_limits(base_plan):
        problems.append('baseline breaks the limits')
    figures = collections.Counter()
    ratios = []
    for label, result in runs(plan, rng):
        figures['runs'] += 1
        done = finishes(result)
        if done and max(done.values()) > 1 or (
                result.finished or base.finished) and (
                set(done) != {t.id for t in job.tasks}):
            problems.append('%s: tasks not run exactly once' % label)
        if not _strict_json(result.records):
            problems.append('%s: journal not strict JSON' % label)
        if not base_meets:
            continue
        figures['guaranteed'] += 1
        figures['taken_over'] += bool(_events(result, 'take_over'))
        ratios.append(cost(result) / cost(base))
        end = makespan(result)
        if end is not None and end <= job.deadline_s:
            continue
        figures['misses'] += 1
        problems.append('%s: makespan %s > D %s (cost %.2fx the baseline)'
                        % (label, end, job.deadline_s, ratios[-1]))
    none = backend.run(plan)
    if cheap and base_meets and cost(none) > cost(base):
        problems.append('costs %.4f > baseline %.4f without preemption'
                        % (cost(none), cost(base)))
    return problems, figures, ratios


@pytest.mark.parametrize('index', range(JOBS))
def test_guarantees_hold_on_generated_job(index):
    problems, _, _ = check_job(index)
    assert not problems, (index, generate(index), problems)


def test_the_take_over_is_what_keeps_the_deadline():
    # Before the take-over, 5 of the 1,759 runs of the CI jobs whose
    # baseline met D missed it (238 runs in 3,000 jobs; generated before
    # run times unrelated to speed were added).
    total = collections.Counter()
    for index in range(JOBS):
        total.update(check_job(index)[1])
    assert total['misses'] == 0, dict(total)
    assert total['taken_over'] >= 0.01 * total['guaranteed'], dict(total)


def _map_sum(plan):
    """What a map's servers bill by its own numbers: to the end of the
    allocation cycle of their last task, or to the makespan."""
    ac = plan.job.policy.ac_s
    return sum(s.price_h * min(math.ceil(s.finish / ac) * ac, plan.makespan)
               for s in plan.servers) / 3600.0


def test_the_plan_is_chosen_by_what_the_executor_bills():
    # Job 2949 of the generator: by the maps' own numbers the HADS map (a
    # dear normal server and a cheap preemptible one) bills less than the
    # baseline; run, it bills more, because on the baseline's run the
    # cheap normal server takes queued work from the dear one.  Chosen by
    # the maps' numbers, it cost 1.07 times the baseline with no
    # preemption at all.
    job = generate(2949)
    hads = job_map.hads_map(job)
    base = job_map.normal_only(hads)
    assert _map_sum(hads) < _map_sum(base)
    assert map_choice.dry_run_cost(hads) > map_choice.dry_run_cost(base)
    plan = map_choice.primary_map(job)
    assert not plan.count(model.PREEMPTIBLE)
    assert plan.risks == ['preemptible servers would cost more than normal '
                          'ones: planned on normal servers only']


def test_limits_lowered_for_a_run_plan_the_job_again():
    # Job 85 run with --normal-limit 1 --max-normal 1: the map made under
    # the job's own limits counted on normal servers the run could not
    # have, and cost 3.3 times the baseline with no preemption at all.
    job = generate(85)
    plan = map_choice.primary_map(job)
    kept = plan.with_job(job.with_limits(1, 1))
    base = cost(backend.run(job_map.normal_only(kept)))
    assert cost(backend.run(kept)) > 3 * base
    assert cost(backend.run(map_choice.under_limits(plan, 1, 1))) <= base
    # Raised limits keep the plan (B5).
    assert map_choice.under_limits(plan, 50, 50).servers is plan.servers


def test_generator_covers_the_cases_that_broke_the_guarantee():
    jobs = [generate(i) for i in range(JOBS)]
    flavors = [f for j in jobs for f in j.flavors.values()]
    assert any('fast' in j.flavors for j in jobs)
    assert any(f.price_h[model.PREEMPTIBLE] > f.price_h[model.NORMAL]
               for f in flavors)
    assert any(f.limits[model.NORMAL] == 0 for f in flavors)
    assert any(j.policy.max_normal < sum(f.limits[model.NORMAL]
                                         for f in j.flavors.values())
               for j in jobs)
    assert any(max(t.memory_mb for t in j.tasks) > 8192 for j in jobs)
    # Run times out of line with the flavors' speed.
    assert any(max(work) > 1.5 * min(work) for work in (
        [t.runtime_s[f.name] * f.gflops_per_vcpu for f in j.flavors.values()]
        for j in jobs for t in j.tasks))
    assert any(j.policy.dspot == 'code' for j in jobs)
    assert any(not isinstance(j.policy.dspot, str)
               and j.policy.dspot > j.deadline_s for j in jobs)


def test_baseline_keeps_to_the_job_limits():
    # A map of more servers than the normal limits allow (7 against 5 in
    # issue 12) is no cost anyone could pay: map again, within them.
    f = model.Flavor(name='f', vcpus=1, ram_mb=4096.0, gflops=40.0,
                     price_h={model.PREEMPTIBLE: 0.03, model.NORMAL: 0.1},
                     limits={model.PREEMPTIBLE: 10, model.NORMAL: 10})
    tasks = tuple(model.Task(id='t%d' % i, command='', memory_mb=100.0,
                             runtime_s={'f': 600.0}) for i in range(7))
    job = model.Job(name='limits', deadline_s=2100.0,
                    policy=model.Policy(dspot=1500.0), flavors={'f': f},
                    tasks=tasks)
    plan = map_choice.primary_map(job)
    assert plan.count(model.PREEMPTIBLE) == 7
    tight = plan.with_job(job.with_limits(2, 5))
    base = job_map.normal_only(tight)
    assert job_map.within_limits(base)
    assert len(base.servers) == 2 and base.risks
    assert job_map.normal_only(plan).count(model.NORMAL) == 7


def test_a_big_task_shrinks_only_the_flavors_it_fits():
    small = model.Flavor(name='small', vcpus=4, ram_mb=4096.0, gflops=80.0,
                         price_h={model.PREEMPTIBLE: 0.03,
                                  model.NORMAL: 0.1},
                         limits={model.PREEMPTIBLE: 5, model.NORMAL: 5})
    big = model.Flavor(name='big', vcpus=4, ram_mb=16384.0, gflops=80.0,
                       price_h={model.PREEMPTIBLE: 0.1, model.NORMAL: 0.4},
                       limits={model.PREEMPTIBLE: 5, model.NORMAL: 5})
    sizes = [14336.0, 1500.0] + [200.0] * 6
    tasks = tuple(model.Task(id='t%d' % i, command='', memory_mb=m,
                             runtime_s={'small': 300.0, 'big': 300.0})
                  for i, m in enumerate(sizes))
    job = model.Job(name='mem', deadline_s=2100.0, policy=model.Policy(),
                    flavors={'small': small, 'big': big}, tasks=tasks)
    assert job.slots(small) == 4
    # 14 GB + 1.5 GB + 2 x 200 MB fit 16 GB; four slots stay.
    assert job.slots(big) == 4
    tight = dataclasses.replace(job, tasks=tasks + (dataclasses.replace(
        tasks[0], id='t9'),))
    assert tight.slots(big) == 1 and tight.slots(small) == 4
