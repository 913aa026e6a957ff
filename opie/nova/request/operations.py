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

"""Which operation a scheduling request is for, and whether it may preempt.

Nova schedules new servers and moves through the same
``select_destinations``. New servers may always terminate preemptible
instances; a rebuild never does (it stays on its host); the moves listed in
``[opie] preempt_on_move`` may. The operation is read from the instance:
a new server has no cell yet, and a move has set its task state.
"""
from nova.compute import task_states
from nova.compute import vm_states
from nova import context as nova_context
from nova import exception
from nova import objects
from nova.scheduler import utils as scheduler_utils

BOOT = 'boot'
REBUILD = 'rebuild'

_MOVES_BY_TASK_STATE = {
    task_states.MIGRATING: 'live-migrate',
    task_states.REBUILDING: 'evacuate',
    task_states.UNSHELVING: 'unshelve',
}


def operation(context, spec_obj):
    """``boot``, ``rebuild``, a name of ``conf.MOVE_OPERATIONS``, or None
    when the instance is in no state OPIE recognises."""
    if scheduler_utils.request_is_rebuild(spec_obj):
        return REBUILD
    try:
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            context, spec_obj.instance_uuid)
    except exception.InstanceMappingNotFound:
        return BOOT
    if mapping.cell_mapping is None:
        return BOOT
    with nova_context.target_cell(context, mapping.cell_mapping) as cctxt:
        instance = objects.Instance.get_by_uuid(
            cctxt, spec_obj.instance_uuid, expected_attrs=['flavor'])
    if instance.task_state == task_states.RESIZE_PREP:
        same = instance.flavor.flavorid == spec_obj.flavor.flavorid
        return 'migrate' if same else 'resize'
    if (instance.task_state == task_states.UNSHELVING
            and instance.vm_state != vm_states.SHELVED_OFFLOADED):
        return None
    return _MOVES_BY_TASK_STATE.get(instance.task_state)
