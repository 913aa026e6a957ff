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

"""The plan reads the instances of only the hosts whose verdict they can
change, and decides exactly as it did when it read them all.

Oracle: the same plan with nothing told from the usages
(``Plan._refused_unread`` answering no, today's path before it), on random
clouds: hosts with and without room, preemptibles of three sizes, ages,
tiers and minimum uptimes, some ineligible, some hosts without a token;
normal and preemptible requests of two instances, the first one's victims
taken and its room used before the second is ranked, with ``[opie]
max_victims`` and both rankings. Nova's filter handler and weight handler
run OPIE's filter, Nova's RAM and CPU weighers (whose weights Nova
normalises over the hosts that pass: a verdict changed anywhere would move
them) and OPIE's two weighers, then the plan orders them by fit and tier,
as the manager does. Each instance's passing hosts, weights, order and
victims, every refusal's reason and each preemption's explanation must be
the oracle's.
"""
import dataclasses
import random
from unittest import mock

from nova.scheduler import filters as nova_filters
from nova.scheduler import weights as nova_weights
from nova.scheduler.weights import cpu
from nova.scheduler.weights import ram

from opie.core import resources as res
from opie.core import scheduling
from opie.nova import filters
from opie.nova.request import plan as plan_mod
from opie.nova.weights import overcommit
from opie.nova.weights import preemption_cost
from tests.functional.plugin import cloud as cloud_mod

SEEDS = range(500)
SIZES = sorted(cloud_mod.SIZES)


def _random_cloud(rng):
    cloud = cloud_mod.Cloud()
    for h in range(rng.randint(2, 8)):
        room = cloud_mod.CAPACITY
        normal = res.ZERO
        for _ in range(rng.randint(0, 4)):
            size = cloud_mod.SIZES[rng.choice(SIZES)]
            if room.covers(size):
                normal, room = normal + size, room - size
        preemptibles = []
        for i in range(rng.randint(0, 6)):
            size = rng.choice(SIZES)
            if not room.covers(cloud_mod.SIZES[size]) and rng.random() < .8:
                continue
            room = room - cloud_mod.SIZES[size]
            preemptibles.append(dataclasses.replace(
                cloud_mod.victim('h%dp%d' % (h, i), size,
                                 minutes=rng.randint(0, 120),
                                 eligible=rng.random() > .1),
                tier=rng.choice((0, 0, 1)),
                minimum_uptime=rng.choice((0.0, 0.0, 1800.0))))
        cloud.host('h%d' % h, normal, preemptibles,
                   token=rng.random() > .1)
    return cloud


def _rank(plan, host_states, spec):
    """One instance's ranking as the manager has Nova make it."""
    passing = nova_filters.HostFilterHandler().get_filtered_objects(
        [filters.PreemptibleFilter()], host_states, spec)
    weighed = nova_weights.HostWeightHandler().get_weighed_objects(
        [ram.RAMWeigher(), cpu.CPUWeigher(),
         overcommit.OvercommitWeigher(),
         preemption_cost.PreemptionCostWeigher()], passing, spec)
    order = plan.lowest_tier_first([w.obj for w in weighed])
    plan.ranked(order)
    return [(w.obj.host, w.weight) for w in weighed], [h.host for h in order]


def _schedule(cloud, spec, instances=2):
    """What Nova and the plan decide for each instance of the request."""
    plan = cloud.plan(spec)
    host_states = cloud.host_states()
    decided = []
    with plan_mod.activated(plan):
        for n in range(instances):
            weighed, order = _rank(plan, host_states, spec)
            chosen = order and next(h for h in host_states
                                    if h.host == order[0])
            option = chosen and plan.option(chosen)
            decided.append((weighed, order, option, dict(plan.refusals),
                            plan.reason()))
            if not option:
                break
            record = plan.record(chosen)
            victims = () if option.fits else option.victims
            plan.committed(record, record.generation + 1, 'server-%d' % n,
                           victims, [object()] * len(victims), option.cost)
            plan.place(record)
    # What each preemption is explained by (hosts, costs, refusals).
    return decided, [p.explanation for p in plan.preemptions]


def _read(cloud):
    return sum(len(hosts) for hosts, _ in cloud.loads)


def test_the_plan_decides_as_when_it_read_every_host(opie_options):
    read = oracle_read = 0
    for seed in SEEDS:
        rng = random.Random(-1 - seed)
        opie_options(max_victims=rng.choice((None, None, 1, 3)),
                     ranking=rng.choice(scheduling.RANKINGS))
        spec = cloud_mod.spec(rng.choice(SIZES),
                              preemptible=rng.random() < .2)
        # The same cloud twice: each counts its own reads.
        cloud = _random_cloud(random.Random(seed))
        oracle_cloud = _random_cloud(random.Random(seed))

        decided = _schedule(cloud, spec)
        with mock.patch.object(plan_mod.Plan, '_refused_unread',
                               return_value=False):
            expected = _schedule(oracle_cloud, spec)

        assert decided == expected, seed
        read += _read(cloud)
        oracle_read += _read(oracle_cloud)
    print('hosts whose instances were read: %d, the oracle %d (%.2f)'
          % (read, oracle_read, read / oracle_read))
    assert read < oracle_read


def _three_hosts(dearest_minutes):
    """a's cheapest victim has run 20 minutes, b's 20.1 (b has more free
    RAM), c's ``dearest_minutes``: c is never the best."""
    return (cloud_mod.Cloud()
            .host('a', preemptibles=[cloud_mod.victim('a%d' % i, minutes=m)
                                     for i, m in enumerate((20, 30, 40, 45))])
            .host('b', normal=res.Resources(6, 0, 0),
                  preemptibles=[cloud_mod.victim('b0', minutes=20.1)])
            .host('c', preemptibles=[
                cloud_mod.victim('c%d' % i, minutes=dearest_minutes)
                for i in range(4)]))


def test_the_dearest_host_decides_between_the_two_best():
    """Why every host that passes is searched: Nova normalises each
    weigher over the hosts that pass, so the dearest host's exact cost
    sets how much a cost difference weighs against the other weighers'
    (here Nova's RAM weigher, default multipliers). A bound that left the
    dearest host unsearched would choose another host."""
    spec = cloud_mod.spec('medium')
    chosen = {}
    for minutes in (25, 50):
        decided = _schedule(_three_hosts(minutes), spec, instances=1)
        weighed, order, option, _, _ = decided[0][0]
        assert order[-1] == 'c'
        chosen[minutes] = order[0], [v.name for v in option.victims]

    assert chosen == {25: ('a', ['a0']), 50: ('b', ['b0'])}
