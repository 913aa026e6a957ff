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

"""``opie-manage audit --cloud``: flavors and inventories, without a cloud.
"""
import pytest

from opie.cmd import audit_cloud
from opie.core import flavor_spec
from opie.core import host

NORMAL = flavor_spec.Flavor('m1.small', 1, 2048, 20)
TWIN = flavor_spec.Flavor('m1.small-preemptible', 1, 2048, 20,
                          extra_specs=flavor_spec.preemptible_specs(NORMAL))
STANDARD = {'VCPU': {'total': 8, 'reserved': 0, 'allocation_ratio': 4.0},
            'MEMORY_MB': {'total': 16384, 'reserved': 512,
                          'allocation_ratio': 1.0},
            'DISK_GB': {'total': 100, 'reserved': 0,
                        'allocation_ratio': 1.0}}


def _inventories(**changes):
    found = dict(STANDARD)
    for name, inventory in STANDARD.items():
        found['CUSTOM_PREEMPTIBLE_' + name] = dict(inventory)
    found['CUSTOM_OPIE_HOST'] = {'total': 1, 'reserved': 0, 'max_unit': 1,
                                 'allocation_ratio': 1.0}
    for name, change in changes.items():
        if change is None:
            del found[name]
        else:
            found[name] = dict(found[name], **change)
    return found


def test_flavors_of_a_correct_cloud_pass():
    assert audit_cloud.check_flavors([NORMAL, TWIN]) == []


def test_a_cloud_without_preemptible_flavors_is_reported():
    [problem] = audit_cloud.check_flavors([NORMAL])

    assert problem.message == ('none is marked opie:preemptible=true, so '
                               'nobody can start a preemptible server')
    assert problem.fix == 'opie-manage flavor create-preemptible NORMAL_FLAVOR'


def test_every_faulty_flavor_is_reported():
    broken = flavor_spec.Flavor(
        'p.broken', 2, 4096, 40, extra_specs=dict(
            flavor_spec.preemptible_specs(NORMAL)))

    found = audit_cloud.check_flavors([NORMAL, TWIN, broken])

    assert {p.subject for p in found} == {'flavor p.broken'}
    assert len(found) == 3  # VCPU, MEMORY_MB and DISK_GB amounts


def test_a_correct_compute_node_passes():
    assert audit_cloud.check_inventories('host-A', _inventories()) == []


def test_capacity_counts_reserved_and_ratio():
    assert host.inventory_capacity(STANDARD['MEMORY_MB']) == 15872
    assert host.inventory_capacity({'total': 8}) == 8


@pytest.mark.parametrize('changes, message', [
    ({'CUSTOM_PREEMPTIBLE_VCPU': None, 'CUSTOM_PREEMPTIBLE_DISK_GB': None},
     'has no inventory of CUSTOM_PREEMPTIBLE_VCPU, '
     'CUSTOM_PREEMPTIBLE_DISK_GB, so preemptible servers cannot be placed '
     'there'),
    ({'VCPU': {'allocation_ratio': 16.0}},
     'CUSTOM_PREEMPTIBLE_VCPU capacity is 32 but VCPU capacity is 128, so '
     'preemptible servers can use less than the host'),
    ({'CUSTOM_PREEMPTIBLE_MEMORY_MB': {'reserved': 0}},
     'CUSTOM_PREEMPTIBLE_MEMORY_MB capacity is 16384 but MEMORY_MB capacity '
     'is 15872, so preemptible servers can use more than the host'),
    ({'CUSTOM_OPIE_HOST': None},
     'has no inventory of CUSTOM_OPIE_HOST (one unit, the host token), so '
     'opie-scheduler places no server on this compute'),
    ({'CUSTOM_OPIE_HOST': {'total': 2, 'max_unit': 2}},
     'has a wrong inventory of CUSTOM_OPIE_HOST (one unit, the host '
     'token), so opie-scheduler places no server on this compute'),
])
def test_each_faulty_inventory_is_named(changes, message):
    [problem] = audit_cloud.check_inventories('host-A',
                                              _inventories(**changes))

    assert problem.subject == 'compute node host-A'
    assert problem.message == message
    assert problem.fix.startswith('on host-A: opie-manage provider-config')


def test_a_node_unknown_to_placement_is_reported():
    [problem] = audit_cloud.check_inventories('host-A', None)

    assert problem.message == 'has no resource provider in Placement'


def test_providers_without_vcpu_are_not_vm_hosts():
    assert audit_cloud.check_inventories(
        'ironic-1', {'CUSTOM_BAREMETAL_GOLD': {'total': 1}}) == []


def test_a_standard_class_the_node_lacks_is_not_compared():
    inventories = _inventories(DISK_GB=None)

    assert audit_cloud.check_inventories('host-A', inventories) == []
