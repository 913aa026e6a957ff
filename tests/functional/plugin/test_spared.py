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

"""The terminator's last word on a victim, read again right before the kill
(:func:`opie.nova.request.terminate.spared`): killed only while it is
preemptible and its room is needed."""
import types

import pytest

from opie.core import flavor_spec
from opie.nova.request import plan
from opie.nova.request import terminate

HERE, ELSEWHERE = 'rp-here', 'rp-elsewhere'
PREEMPTION = plan.Preemption('host-A', 'host-A', (), 0.0,
                             provider_uuid=HERE)
PREEMPTIBLE = flavor_spec.preemptible_specs(
    flavor_spec.Flavor('', 2, 4000, 40))


def instance(specs=PREEMPTIBLE, task_state=None, vm_state='active',
             host='host-A', locked_by=None):
    flavor = types.SimpleNamespace(name='m', vcpus=2, memory_mb=4000,
                                   root_gb=40, ephemeral_gb=0, swap=0,
                                   extra_specs=dict(specs))
    return types.SimpleNamespace(flavor=flavor, task_state=task_state,
                                 vm_state=vm_state, host=host,
                                 locked=locked_by is not None,
                                 locked_by=locked_by)


def never_asked():
    raise AssertionError('whether the host is over capacity does not '
                         'matter here')


@pytest.mark.parametrize('victim, held, why', [
    # Its owner reverted the resize that made it preemptible.
    (instance(specs={}), {}, 'no longer preemptible'),
    (instance(task_state='deleting'), {}, 'already leaving'),
    (instance(vm_state='shelved_offloaded'), {}, 'already leaving'),
    # Moved to another host since it was taken, or moving there.
    (instance(host='host-B'), {ELSEWHERE: {}}, 'moved to another host'),
    (instance(task_state='migrating'), {ELSEWHERE: {}},
     'moved to another host'),
    # Between two claims of its own move.
    (instance(task_state='resize_prep'), {}, 'middle of a move'),
])
def test_spared(victim, held, why):
    assert why in terminate.spared(victim, held, PREEMPTION, never_asked)


@pytest.mark.parametrize('victim, held', [
    (instance(), {}),
    # An operator's lock set after its room was given.
    (instance(locked_by='admin'), {}),
    (instance(vm_state='resized'), {}),
    (instance(task_state='resize_confirming', vm_state='resized'), {}),
    # Idle where it was taken, holding only a stale allocation elsewhere.
    (instance(), {ELSEWHERE: {}}),
])
def test_killed(victim, held):
    assert terminate.spared(victim, held, PREEMPTION, never_asked) is None


def test_holding_its_room_again_is_killed_only_on_a_full_host():
    victim, held = instance(), {HERE: {}}
    assert terminate.spared(victim, held, PREEMPTION, lambda: True) is None
    assert 'host has room' in terminate.spared(victim, held, PREEMPTION,
                                               lambda: False)


def test_a_delete_never_done_is_finished_when_found_left_running():
    victim = instance(task_state='deleting')
    assert terminate.spared(victim, {}, PREEMPTION, never_asked,
                            left=True) is None
