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

"""What one request's plan decides as Nova claims host after host: the
victim budget ``[opie] max_victims`` shared by every host of a request,
and a host read again after a refused write or a victim found stale.

The manager's claiming client drives the plan as :func:`_claim` does
here; its compare-and-swap against Placement is the slow tests' subject.
"""
from opie.core import preemptible
from opie.core import resources as res
from opie.core import scheduling
from opie.nova.request import host_records
from opie.nova.request import plan as plan_mod
from tests.functional.plugin import cloud as cloud_mod
from tests.functional.plugin.cloud import spec
from tests.functional.plugin.cloud import victim

# Four medium preemptibles fill a host; the youngest costs least.
FULL = [victim('p%d' % i, minutes=10 * i) for i in range(4)]


def _states(cloud):
    return {h.host: h for h in cloud.host_states()}


def _claim(plan, host_state, instance_uuid):
    """What the manager does once Nova chose ``host_state``: take the
    option's victims in one write (the token one generation on), then
    place the instance there."""
    option = plan.option(host_state)
    record = plan.record(host_state)
    plan.committed(record, record.generation + 1, instance_uuid,
                   option.victims, [object()] * len(option.victims),
                   option.cost)
    plan.place(record)
    return [v.name for v in option.victims]


def _usages(normal, preemptible_used):
    """Placement's usages of a compute node."""
    return dict(zip(preemptible.STANDARD, normal)) | dict(
        zip(preemptible.CUSTOM, preemptible_used))


def _names(option):
    return [v.name for v in option.victims]


def test_max_victims_is_one_budget_for_every_host(cloud, opie_options):
    opie_options(max_victims=2)
    cloud.host('a', preemptibles=FULL).host('b', preemptibles=FULL)
    plan = cloud.plan(spec('large'))
    states = _states(cloud)
    with plan_mod.activated(plan):
        assert cloud_mod.passing(list(states.values()),
                                 spec('large')) == ['a', 'b']

        assert _claim(plan, states['a'], 'server-1') == ['p0', 'p1']

        # b lost no instance, yet its two victims now exceed the budget.
        assert cloud_mod.passing(list(states.values()), spec('large')) == []
    assert plan.refusals == {'a': scheduling.TOO_MANY_VICTIMS,
                             'b': scheduling.TOO_MANY_VICTIMS}


def test_without_max_victims_other_hosts_keep_their_victims(cloud):
    cloud.host('a', preemptibles=FULL).host('b', preemptibles=FULL)
    plan = cloud.plan(spec('large'))
    states = _states(cloud)
    with plan_mod.activated(plan):
        assert _claim(plan, states['a'], 'server-1') == ['p0', 'p1']

        assert cloud_mod.passing(list(states.values()),
                                 spec('large')) == ['a', 'b']
    assert _names(plan.option(states['a'])) == ['p2', 'p3']
    assert _names(plan.option(states['b'])) == ['p0', 'p1']


def test_a_victim_found_stale_is_never_chosen_again(cloud):
    """Its row says it is no victim now (an operator locked it, say): the
    host's preemptibles are read in full, past the cache, and the next
    cheapest is chosen, though the list still has it."""
    cloud.host('a', preemptibles=FULL)
    plan = cloud.plan(spec('medium'))
    state = _states(cloud)['a']
    record = plan.record(state)
    assert _names(plan.option(state)) == ['p0']

    plan.not_a_victim(record, 'uuid-p0')
    plan.refresh(record, 5, _usages(res.ZERO, cloud_mod.SIZES['medium'] * 4))

    assert record.generation == 5
    assert cloud.loads[-1] == (['a'], True)
    assert _names(plan.option(state)) == ['p1']


def test_a_refused_write_reads_the_host_again_from_the_cache(cloud):
    cloud.host('a', preemptibles=FULL)
    plan = cloud.plan(spec('medium'))
    state = _states(cloud)['a']
    record = plan.record(state)
    assert _names(plan.option(state)) == ['p0']

    plan.stale(record)
    assert record.generation is host_records.UNKNOWN
    plan.refresh(record, 7, _usages(res.ZERO, cloud_mod.SIZES['medium'] * 4))

    assert cloud.loads[-1] == (['a'], False)
    assert _names(plan.option(state)) == ['p0']


def test_the_verdict_follows_the_usage_read_again(cloud):
    """Another writer filled the host with normal servers, or its
    preemptibles were deleted: the host is refused, or fits, on what
    Placement counts now."""
    cloud.host('a', preemptibles=FULL)
    plan = cloud.plan(spec('large'))
    state = _states(cloud)['a']
    record = plan.record(state)
    assert _names(plan.option(state)) == ['p0', 'p1']

    plan.stale(record)
    plan.refresh(record, 2, _usages(res.Resources(6, 4000, 40),
                                    cloud_mod.SIZES['medium']))
    assert plan.option(state) is None
    assert plan.refusals == {'a': scheduling.NO_ROOM_NORMAL}

    cloud.instances['a'] = []
    plan.stale(record)
    plan.refresh(record, 3, _usages(res.ZERO, res.ZERO))
    assert plan.option(state).fits
    assert plan.refusals == {}
