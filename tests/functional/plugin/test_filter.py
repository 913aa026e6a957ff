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

"""PreemptibleFilter's verdict on each host, and the reason it gives.

Run by Nova's filter handler on Nova's fake host states, with the plan the
manager opens made current (under ``opie-scheduler``) or with none (under
the stock ``nova-scheduler``, or in safe mode, where nothing may be
preempted).
"""
import pytest

from opie.core import resources as res
from opie.core import scheduling
from opie.nova.request import operations
from opie.nova.request import plan as plan_mod
from tests.functional.plugin import cloud as cloud_mod
from tests.functional.plugin.cloud import spec
from tests.functional.plugin.cloud import victim

# Four medium preemptibles fill a host (8 vCPU).
FULL = [victim('p%d' % i, minutes=10 * i) for i in range(4)]
LOCKED = [victim('l%d' % i, eligible=False) for i in range(4)]
NORMAL_FULL = res.Resources(8, 8000, 80)


def _verdict(cloud, request_spec, operation=operations.BOOT):
    """The hosts passed, and why each other one was refused."""
    plan = cloud.plan(request_spec, operation)
    with plan_mod.activated(plan):
        passed = cloud_mod.passing(cloud.host_states(), request_spec)
    return passed, plan.refusals


@pytest.mark.parametrize('host, request_spec, operation, options', [
    (dict(), spec('medium'), operations.BOOT, {}),
    (dict(), spec('medium', preemptible=True), operations.BOOT, {}),
    (dict(preemptibles=FULL), spec('medium'), operations.BOOT, {}),
    (dict(preemptibles=FULL), spec('medium'), 'evacuate', {}),
    (dict(preemptibles=FULL), spec('medium'), 'migrate',
     dict(preempt_on_move=['migrate'])),
    (dict(preemptibles=FULL), spec('large'), operations.BOOT,
     dict(max_victims=2)),
], ids=['room', 'room-preemptible', 'victims', 'evacuate',
        'migrate-listed', 'max-victims-enough'])
def test_a_host_passes(cloud, opie_options, host, request_spec, operation,
                       options):
    opie_options(**options)
    cloud.host('h', **host)

    assert _verdict(cloud, request_spec, operation) == (['h'], {})


@pytest.mark.parametrize('host, request_spec, operation, options, reason', [
    (dict(token=False), spec('medium'), operations.BOOT, {},
     plan_mod.NO_TOKEN),
    (dict(preemptibles=FULL), spec('medium', preemptible=True),
     operations.BOOT, {}, scheduling.NO_ROOM_FULL),
    (dict(normal=NORMAL_FULL), spec('medium'), operations.BOOT, {},
     scheduling.NO_ROOM_NORMAL),
    (dict(preemptibles=LOCKED), spec('medium'), operations.BOOT, {},
     scheduling.NO_VICTIMS),
    (dict(preemptibles=FULL), spec('large'), operations.BOOT,
     dict(max_victims=1), scheduling.TOO_MANY_VICTIMS),
    (dict(preemptibles=FULL), spec('medium'), 'migrate', {},
     scheduling.NO_ROOM_FULL),
    (dict(preemptibles=FULL), spec('medium'), 'resize',
     dict(preempt_on_move=['migrate']), scheduling.NO_ROOM_FULL),
], ids=['no-token', 'preemptible-full', 'normal-full', 'locked',
        'max-victims', 'migrate', 'resize-unlisted'])
def test_a_host_is_refused_with_its_reason(cloud, opie_options, host,
                                           request_spec, operation, options,
                                           reason):
    opie_options(**options)
    cloud.host('h', **host)

    assert _verdict(cloud, request_spec, operation) == ([], {'h': reason})


def test_the_fault_counts_hosts_by_reason(cloud):
    cloud.host('a', normal=NORMAL_FULL).host('b', preemptibles=LOCKED)
    cloud.host('c', normal=NORMAL_FULL).host('d')
    plan = cloud.plan(spec('medium'))
    with plan_mod.activated(plan):
        passed = cloud_mod.passing(cloud.host_states(), spec('medium'))

    assert passed == ['d']
    assert plan.reason() == 'OPIE: 2 hosts: %s; 1 host: %s.' % (
        scheduling.NO_ROOM_NORMAL, scheduling.NO_VICTIMS)


def test_a_preemptible_request_never_reads_instances(cloud):
    cloud.host('a', preemptibles=FULL).host('b')

    assert _verdict(cloud, spec('small', preemptible=True)) == (
        ['b'], {'a': scheduling.NO_ROOM_FULL})
    assert cloud.loads == []


def test_the_hosts_needing_victims_are_read_in_one_batch(cloud):
    cloud.host('a', preemptibles=FULL).host('b').host('c', preemptibles=FULL)

    assert _verdict(cloud, spec('medium')) == (['a', 'b', 'c'], {})
    assert cloud.loads == [(['a', 'c'], False)]


def test_nova_skips_it_on_a_rebuild(cloud):
    """A rebuild stays on its host: Nova does not run the filter."""
    cloud.host('h', normal=NORMAL_FULL)

    assert _verdict(cloud, spec('medium', rebuild=True),
                    operations.REBUILD) == (['h'], {})


@pytest.mark.parametrize('preemptible', [False, True])
def test_without_a_plan_only_room_counting_every_instance_passes(
        cloud, preemptible):
    """The stock scheduler and safe mode: nothing is preempted, no host
    filled past its capacity."""
    cloud.host('full', preemptibles=FULL).host('free')

    assert cloud_mod.passing(cloud.host_states(),
                             spec('small', preemptible)) == ['free']
