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

"""What ``opie-manage snapshot`` makes of a server's embedded flavor
and its project."""
from opie.cmd import snapshot_command
from opie.core import flavor_spec

SMALL = {'original_name': 'small', 'vcpus': 1, 'ram': 2048, 'disk': 20,
         'ephemeral': 0, 'swap': 512, 'extra_specs': {}}


def test_sizes_as_placement_counts_them():
    assert snapshot_command._embedded(SMALL, volume_backed=False) == {
        'vcpus': 1, 'memory_mb': 2048, 'disk_gb': 21}
    # A volume-backed server takes no root disk on its host.
    assert snapshot_command._embedded(SMALL, volume_backed=True) == {
        'vcpus': 1, 'memory_mb': 2048, 'disk_gb': 1}


def test_resources_overrides_replace_the_sizes():
    specs = flavor_spec.preemptible_specs(flavor_spec.Flavor(
        'small', 1, 2048, 20))
    preemptible = dict(SMALL, swap=0, extra_specs=specs)
    assert snapshot_command._embedded(preemptible, False) == {
        'vcpus': 1, 'memory_mb': 2048, 'disk_gb': 20, 'tier': 0,
        'minimum_uptime': 0}
    pinned = dict(SMALL, swap=0, extra_specs={
        'resources:VCPU': '0', 'resources:PCPU': '1'})
    assert snapshot_command._embedded(pinned, False)['vcpus'] == 0


def test_a_differing_flavor_gets_a_name_no_flavor_has():
    flavors = {'small': {'vcpus': 1}, 'small@1': {'vcpus': 9}}

    assert snapshot_command._flavor_name({'vcpus': 1}, 'small',
                                         flavors) == 'small'
    assert snapshot_command._flavor_name({'vcpus': 2}, 'small',
                                         flavors) == 'small@2'
    assert snapshot_command._flavor_name({'vcpus': 2}, 'small',
                                         flavors) == 'small@2'
    assert flavors['small@1'] == {'vcpus': 9}


def _preemptible(**terms):
    specs = flavor_spec.preemptible_specs(flavor_spec.Flavor(
        'small', 1, 2048, 20))
    specs.update(('opie:' + key, value) for key, value in terms.items())
    return dict(SMALL, swap=0, extra_specs=specs)


def test_a_preemptible_flavor_carries_its_terms():
    sizes = {'vcpus': 1, 'memory_mb': 2048, 'disk_gb': 20}

    assert snapshot_command._embedded(
        _preemptible(tier='2', minimum_uptime='600'), False, 300) == dict(
            sizes, tier=2, minimum_uptime=600)
    # Unset or bad: tier 0, the scheduler's [opie] minimum_uptime.
    assert snapshot_command._embedded(
        _preemptible(tier='gold'), False, 300) == dict(
            sizes, tier=0, minimum_uptime=300)
    # A normal flavor has no terms.
    assert 'tier' not in snapshot_command._embedded(
        dict(SMALL, extra_specs={'opie:tier': '2'}), False, 300)


class _Server:
    id = 'u1'
    name = 'p1'
    flavor = _preemptible(tier='1')

    def to_dict(self):
        return {'image': {'id': 'i'}, 'tenant_id': 'alpha',
                'OS-SRV-USG:launched_at': '2026-01-01T10:00:00.000000'}


def test_a_server_names_its_project_and_the_terms_it_was_booted_with():
    flavors = {'small': {'vcpus': 1, 'memory_mb': 2048, 'disk_gb': 20,
                         'tier': 2, 'minimum_uptime': 0}}

    found = snapshot_command._instance(_Server(), flavors)

    assert found['project_id'] == 'alpha'
    # The flavor's terms changed since: the server keeps its own.
    assert found['flavor'] == 'small@1'
    assert flavors['small@1']['tier'] == 1
