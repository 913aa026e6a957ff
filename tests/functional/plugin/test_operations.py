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

"""Which operation a request is for, and whether it may preempt.

New servers may; a rebuild never does; moves only where ``[opie]
preempt_on_move`` lists them (evacuate and unshelve by default, never a
live migration). The operation is read from the instance as Nova has it:
its cell mapping, task and VM state, flavor; those reads are Nova's
objects, answered here from memory.
"""
import contextlib
import types
from unittest import mock

import pytest

from nova.compute import task_states
from nova.compute import vm_states
import nova.conf
from nova import exception
from nova import objects

from opie.nova import conf as opie_conf
from opie.nova.request import operations
from tests.functional.plugin.cloud import spec

ALL_MOVES = sorted(set(opie_conf.MOVE_OPERATIONS)
                   - opie_conf.NEVER_PREEMPT_ON)
NEW = None


def _instance_in_cell(task_state, vm_state=vm_states.ACTIVE,
                      flavorid='medium'):
    return types.SimpleNamespace(
        task_state=task_state, vm_state=vm_state,
        flavor=types.SimpleNamespace(flavorid=flavorid))


@contextlib.contextmanager
def _nova_has(instance, mapped=True):
    """Nova's database: ``instance`` in a cell, or a new server (None)
    whose mapping is ``mapped`` to no cell yet, or not at all."""
    def mapping(context, uuid):
        if instance is None and not mapped:
            raise exception.InstanceMappingNotFound(uuid=uuid)
        return types.SimpleNamespace(
            cell_mapping=None if instance is None else 'cell1')

    with mock.patch.object(objects.InstanceMapping, 'get_by_instance_uuid',
                           side_effect=mapping), \
            mock.patch.object(objects.Instance, 'get_by_uuid',
                              return_value=instance), \
            mock.patch.object(operations.nova_context, 'target_cell',
                              return_value=contextlib.nullcontext()):
        yield


# (instance as Nova has it, the request, the operation OPIE reads, may it
# preempt by default, may it with every move OPIE accepts listed)
OPERATIONS = [
    pytest.param(NEW, spec('medium'), operations.BOOT, True, True,
                 id='boot'),
    pytest.param(NEW, spec('medium', rebuild=True), operations.REBUILD,
                 False, False, id='rebuild'),
    pytest.param(_instance_in_cell(task_states.REBUILDING), spec('medium'),
                 'evacuate', True, True, id='evacuate'),
    pytest.param(_instance_in_cell(task_states.UNSHELVING,
                                   vm_states.SHELVED_OFFLOADED),
                 spec('medium'), 'unshelve', True, True, id='unshelve'),
    pytest.param(_instance_in_cell(task_states.RESIZE_PREP,
                                   flavorid='small'),
                 spec('medium'), 'resize', False, True, id='resize'),
    pytest.param(_instance_in_cell(task_states.RESIZE_PREP), spec('medium'),
                 'migrate', False, True, id='migrate'),
    pytest.param(_instance_in_cell(task_states.MIGRATING), spec('medium'),
                 'live-migrate', False, False, id='live-migrate'),
    # Not offloaded: its unshelve schedules nothing OPIE knows.
    pytest.param(_instance_in_cell(task_states.UNSHELVING,
                                   vm_states.SHELVED),
                 spec('medium'), None, False, False,
                 id='unshelve-not-offloaded'),
    pytest.param(_instance_in_cell(None), spec('medium'), None, False,
                 False, id='no-task'),
]


@pytest.mark.parametrize('instance, request_spec, operation, by_default, '
                         'every_move_listed', OPERATIONS)
def test_may_preempt_per_operation(cloud, opie_options, instance,
                                   request_spec, operation, by_default,
                                   every_move_listed):
    with _nova_has(instance):
        found = operations.operation(None, request_spec)
    cloud.host('h')

    assert found == operation
    assert cloud.plan(request_spec, found).may_preempt is by_default
    opie_options(preempt_on_move=ALL_MOVES)
    assert cloud.plan(request_spec, found).may_preempt is every_move_listed


def test_a_new_server_not_mapped_yet_is_a_boot():
    with _nova_has(NEW, mapped=False):
        assert operations.operation(None, spec('medium')) == operations.BOOT


def test_a_live_migration_cannot_be_listed(opie_options):
    opie_options(preempt_on_move=['evacuate', 'live-migrate'])

    with pytest.raises(opie_conf.ConfigError, match='live-migrate cannot '
                       'preempt'):
        opie_conf.load_settings(nova.conf.CONF)


def test_nova_is_asked_once_and_never_for_a_preemptible_request(cloud):
    cloud.host('h')
    normal = cloud.plan(spec('medium'), 'migrate')
    preemptible = cloud.plan(spec('medium', preemptible=True))

    assert [normal.may_preempt, normal.may_preempt] == [False, False]
    assert preemptible.may_preempt is False
    assert cloud.asked == ['migrate']
