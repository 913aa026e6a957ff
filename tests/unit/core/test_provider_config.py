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

"""The provider config every compute node needs."""
import pytest

from opie.core import preemptible
from opie.core import provider_config
from opie.core import resources as res

TOTAL = res.Resources(16, 65536, 500)
RATIOS = res.Resources(4.0, 1.5, 1.0)
RESERVED = res.Resources(2, 4096, 10)


def test_custom_inventory_mirrors_the_standard_one():
    document = provider_config.build(TOTAL, RATIOS, RESERVED)

    assert document['meta'] == {'schema_version': '1.0'}
    [provider] = document['providers']
    assert provider['identification'] == {'uuid': '$COMPUTE_NODE'}
    assert provider['inventories']['additional'] == [
        {'CUSTOM_PREEMPTIBLE_VCPU': {'total': 16, 'reserved': 2,
                                     'max_unit': 16,
                                     'allocation_ratio': 4.0}},
        {'CUSTOM_PREEMPTIBLE_MEMORY_MB': {'total': 65536, 'reserved': 4096,
                                          'max_unit': 65536,
                                          'allocation_ratio': 1.5}},
        {'CUSTOM_PREEMPTIBLE_DISK_GB': {'total': 500, 'reserved': 10,
                                        'max_unit': 500,
                                        'allocation_ratio': 1.0}},
        {'CUSTOM_OPIE_HOST': {'total': 1, 'reserved': 0, 'max_unit': 1,
                              'allocation_ratio': 1.0}}]


def test_custom_inventories_reads_back_what_build_wrote():
    document = provider_config.build(TOTAL, RATIOS, RESERVED)

    found = provider_config.custom_inventories(document)

    assert found['CUSTOM_PREEMPTIBLE_MEMORY_MB']['total'] == 65536
    assert sorted(found) == sorted(['CUSTOM_OPIE_HOST',
                                    *preemptible.CUSTOM])
    assert provider_config.custom_inventories({'meta': {}}) == {}
    assert provider_config.custom_inventories(None) == {}


def test_a_class_nova_reports_none_of_is_left_out():
    """Every CPU dedicated: Nova reports no VCPU (Placement refuses a total
    of 0)."""
    document = provider_config.build(res.Resources(0, 1024, 10), RATIOS,
                                     res.ZERO)

    assert sorted(provider_config.custom_inventories(document)) == [
        'CUSTOM_OPIE_HOST', 'CUSTOM_PREEMPTIBLE_DISK_GB',
        'CUSTOM_PREEMPTIBLE_MEMORY_MB']


@pytest.mark.parametrize('total, reserved, message', [
    (res.Resources(-1, 1024, 10), res.ZERO,
     'CUSTOM_PREEMPTIBLE_VCPU: a total cannot be negative, got -1'),
    (TOTAL, res.Resources(0, 70000, 0),
     'CUSTOM_PREEMPTIBLE_MEMORY_MB: 70000 reserved is more than the total'),
    # A measure gone wrong (a Ceph cluster of 10^30 bytes, say).
    (res.Resources(1, 1024, 931322574615478534144), res.ZERO,
     r'CUSTOM_PREEMPTIBLE_DISK_GB: a total of 931322574615478534144 is more '
     r'than Placement holds \(2147483647\)'),
])
def test_impossible_inventories_are_refused(total, reserved, message):
    with pytest.raises(ValueError, match=message):
        provider_config.build(total, RATIOS, reserved)
