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

"""Which preemptibles are victims, as the scheduler reads them from Nova's
instances (:func:`opie.nova.request.host_records.core_instance`): whatever its
owner does (lock, rescue, stop, suspend, pause), a preemptible stays a victim;
only an operator's lock protects it.

Reading the lock from the cell databases, on a first read and past the
instance cache, is the slow tests' subject (``test_preemption``'s
EveryRefusalTold, ``test_instance_cache``); the owner's actions through
Nova's API ``test_tenant_actions``'.
"""
import datetime
import types

import pytest

from opie.nova.request import host_records
from tests.functional.plugin.cloud import spec
from tests.unit.core import helpers

MEDIUM = spec('medium', preemptible=True).flavor


def _instance(name, minutes, locked_by=None, vm_state='active'):
    """A medium preemptible as Nova's Instance has it, launched
    ``minutes`` ago."""
    return types.SimpleNamespace(
        uuid=name, flavor=MEDIUM, created_at=None, project_id='p',
        launched_at=helpers.NOW - datetime.timedelta(minutes=minutes),
        locked=locked_by is not None, locked_by=locked_by,
        task_state=None, vm_state=vm_state)


@pytest.mark.parametrize('locked_by, vm_state, victim', [
    (None, 'active', 'p0'),
    ('owner', 'active', 'p0'),
    ('owner', 'rescued', 'p0'),
    ('owner', 'stopped', 'p0'),
    ('owner', 'suspended', 'p0'),
    ('owner', 'paused', 'p0'),
    # The next cheapest.
    ('admin', 'active', 'p1'),
])
def test_only_an_operators_lock_protects(cloud, locked_by, vm_state,
                                         victim):
    # A host full of four mediums; p0, the cheapest, as its owner or an
    # operator left it.
    instances = [_instance('p0', 5, locked_by, vm_state)] + [
        _instance('p%d' % i, 5 + 10 * i) for i in range(1, 4)]
    cloud.host('h', preemptibles=[host_records.core_instance(i)
                                  for i in instances])
    [state] = cloud.host_states()

    option = cloud.plan(spec('medium')).option(state)

    assert [v.uuid for v in option.victims] == [victim]
