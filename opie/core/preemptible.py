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

"""The contract that makes a flavor preemptible (design A).

A preemptible flavor carries the extra spec ``opie:preemptible=true``, asks
Placement for nothing of the standard classes and as much of the
``CUSTOM_PREEMPTIBLE_*`` classes instead; every compute node has inventory
of those classes. The scheduler plugin, ``opie-bot`` and ``opie-manage``
(``flavor``, ``provider-config``, ``audit``) all read, build or check this
contract, so its names live here, away from Nova; the extra specs it asks
of a flavor are :mod:`.flavor_spec`'s, the inventory it asks of a compute
:mod:`.provider_config`'s.
"""
from opie.core import resources as res

STANDARD = res.Resources('VCPU', 'MEMORY_MB', 'DISK_GB')
CUSTOM = res.Resources('CUSTOM_PREEMPTIBLE_VCPU',
                       'CUSTOM_PREEMPTIBLE_MEMORY_MB',
                       'CUSTOM_PREEMPTIBLE_DISK_GB')
# One unit on every compute node, held by the host's token consumer: every
# write the scheduler plugin makes on a host rewrites that token at the
# generation it read, so two decisions on one host cannot both commit.
HOST_TOKEN = 'CUSTOM_OPIE_HOST'
HOST_TOKEN_INVENTORY = {'total': 1, 'reserved': 0, 'max_unit': 1,
                        'allocation_ratio': 1.0}
# Every compute node's provider config gives these.
PROVIDER_CONFIG_CLASSES = tuple(CUSTOM) + (HOST_TOKEN,)


def resources_key(resource_class):
    """The flavor extra spec that requests ``resource_class``."""
    return 'resources:%s' % resource_class


# A preemptible instance is a victim whatever its owner does to it (lock,
# rescue, stop, resize...): only an operator's lock protects it. One that
# is already leaving its host still holds its room until it is gone, but
# is no victim. (Nova's names of the states.)
ADMIN_LOCK = 'admin'
LEAVING_TASK_STATES = frozenset(['deleting', 'shelving_offloading'])
LEAVING_VM_STATES = frozenset(['deleted', 'shelved_offloaded'])
# The task states of a move (resize, cold and live migration, evacuation,
# shelve and unshelve). Midway through one, Nova's records disagree for a
# while: the instance row names one host while its allocations sit on
# another, or on none at all until the destination is claimed.
MOVING_TASK_STATES = frozenset([
    'resize_prep', 'resize_migrating', 'resize_migrated', 'resize_finish',
    'resize_reverting', 'migrating', 'rebuilding',
    'rebuild_block_device_mapping', 'rebuild_spawning', 'shelving',
    'shelving_image_pending_upload', 'shelving_image_uploading',
    'unshelving', 'spawning'])


def may_be_victim(locked_by, task_state, vm_state=None):
    """``locked_by``: None (not locked), ``owner`` or ``admin``."""
    return (locked_by != ADMIN_LOCK
            and task_state not in LEAVING_TASK_STATES
            and vm_state not in LEAVING_VM_STATES)
