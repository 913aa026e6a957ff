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

"""What a preemptible flavor must ask of Placement, and checking it."""
import pytest

from opie.core import contract
from opie.core import flavor_spec

SMALL = flavor_spec.Flavor('m1.small', vcpus=1, memory_mb=2048, root_gb=20,
                           ephemeral_gb=5, swap_mb=1500)


def _twin(**specs):
    extra = flavor_spec.preemptible_specs(SMALL)
    extra.update(specs)
    return flavor_spec.Flavor('p.small', 1, 2048, 20, 5, 1500,
                              {k: v for k, v in extra.items()
                               if v is not None})


def test_disk_counts_root_ephemeral_and_swap_rounded_up():
    assert SMALL.size() == (1, 2048, 27)


def test_preemptible_specs_move_every_class_to_the_custom_ones():
    assert flavor_spec.preemptible_specs(SMALL) == {
        'opie:preemptible': 'true',
        'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
        'resources:DISK_GB': '0',
        'resources:CUSTOM_PREEMPTIBLE_VCPU': '1',
        'resources:CUSTOM_PREEMPTIBLE_MEMORY_MB': '2048',
        'resources:CUSTOM_PREEMPTIBLE_DISK_GB': '27'}


def test_a_correct_twin_and_a_plain_normal_flavor_pass():
    assert flavor_spec.check(_twin()) == []
    assert flavor_spec.check(SMALL) == []


@pytest.mark.parametrize('specs, message', [
    ({'resources:VCPU': None},
     "resources:VCPU is missing, expected 0 for a preemptible flavor of "
     "1 vCPU, 2048 MB RAM, 27 GB disk"),
    ({'resources:CUSTOM_PREEMPTIBLE_MEMORY_MB': '1024'},
     "resources:CUSTOM_PREEMPTIBLE_MEMORY_MB is '1024', expected 2048"),
    ({'resources:DISK_GB': 'zero'}, "resources:DISK_GB is 'zero'"),
    ({'hw:cpu_policy': 'dedicated'},
     'preemptible flavors cannot use CPU pinning (hw:cpu_policy=dedicated)'),
    ({'resources:PCPU': '1'}, 'cannot use dedicated CPUs (PCPU)'),
    ({'pci_passthrough:alias': 'gpu:1'}, 'cannot use PCI devices'),
    ({'opie:preemptible': 'ture'},
     'opie:preemptible=ture is neither true nor false'),
])
def test_each_fault_of_a_twin_is_named(specs, message):
    found = flavor_spec.check(_twin(**specs))

    assert len(found) == 1
    assert found[0].subject == 'flavor p.small'
    assert message in found[0].message
    assert found[0].fix.startswith(('openstack flavor ',
                                    'opie-manage flavor '))


def test_fix_is_the_command_that_sets_every_override():
    found = flavor_spec.check(_twin(**{'resources:VCPU': '2'}))

    assert found[0].fix == 'opie-manage flavor set-preemptible p.small'


def _marked_only(flavor):
    """``flavor`` with the mark but none of the overrides."""
    return flavor_spec.Flavor(flavor.name, flavor.vcpus, flavor.memory_mb,
                              flavor.root_gb, flavor.ephemeral_gb,
                              flavor.swap_mb,
                              {contract.PREEMPTIBLE_SPEC: 'true'})


def test_the_specs_a_marked_flavor_lacks_are_all_its_overrides():
    assert flavor_spec.missing_specs(_marked_only(SMALL)) == {
        key: value for key, value in flavor_spec.preemptible_specs(
            SMALL).items() if key != contract.PREEMPTIBLE_SPEC}
    assert flavor_spec.missing_specs(_twin()) == {}
    assert flavor_spec.missing_specs(_twin(**{
        'resources:CUSTOM_PREEMPTIBLE_VCPU': '4'})) == {
            'resources:CUSTOM_PREEMPTIBLE_VCPU': '1'}


@pytest.mark.parametrize('specs, message', [
    ({'resources:VGPU': '1'}, 'cannot use a resource class OPIE does not '
     'model (resources:VGPU=1)'),
    ({'resources2:CUSTOM_GPU': '2'}, 'cannot use a resource class OPIE '
     'does not model (resources2:CUSTOM_GPU=2)'),
])
def test_a_resource_class_opie_does_not_model_is_named(specs, message):
    [problem] = flavor_spec.check(_twin(**specs))

    assert message in problem.message
    assert problem.fix.startswith('openstack flavor unset --property ')


def test_a_zero_amount_of_another_class_requests_nothing():
    assert flavor_spec.check(_twin(**{'resources:VGPU': '0'})) == []


def test_a_preemptible_flavor_of_zero_vcpus_is_named():
    zero = flavor_spec.Flavor('p.zero', 0, 512, 1)
    flavor = flavor_spec.Flavor('p.zero', 0, 512, 1, 0, 0,
                                flavor_spec.preemptible_specs(zero))

    [problem] = flavor_spec.check(flavor)

    assert problem.message == ('has 0 vCPUs: a preemptible flavor needs at '
                               'least one')


def test_a_flavor_keeping_the_contract_or_unmarked_is_not_refused():
    assert flavor_spec.refusal(_twin()) is None
    assert flavor_spec.refusal(SMALL) is None
    typo = _twin(**{contract.PREEMPTIBLE_SPEC: 'ture'})
    assert flavor_spec.refusal(typo) is None


def test_a_marked_flavor_without_its_overrides_is_refused_in_one_line():
    assert flavor_spec.refusal(_marked_only(SMALL)) == (
        'flavor m1.small is marked opie:preemptible=true but does not set '
        'resources:VCPU=0, resources:CUSTOM_PREEMPTIBLE_VCPU=1, '
        'resources:MEMORY_MB=0, resources:CUSTOM_PREEMPTIBLE_MEMORY_MB=2048, '
        'resources:DISK_GB=0, resources:CUSTOM_PREEMPTIBLE_DISK_GB=27 for its '
        'size (1 vCPU, 2048 MB RAM, 27 GB disk), so OPIE treats it as a '
        'normal flavor (its servers are never victims); fix: opie-manage '
        'flavor set-preemptible m1.small')


def test_odd_specs_are_refused_with_each_fix():
    line = flavor_spec.refusal(_twin(**{'resources:PCPU': '1',
                                        'resources:VCPU': '1'}))

    assert line == (
        'flavor p.small is marked opie:preemptible=true but does not set '
        'resources:VCPU=0 for its size (1 vCPU, 2048 MB RAM, 27 GB disk); '
        'preemptible flavors cannot use dedicated CPUs (PCPU) '
        '(resources:PCPU=1): preempting frees only VCPU, MEMORY_MB and '
        'DISK_GB, so OPIE treats it as a normal flavor (its servers are '
        'never victims); fix: opie-manage flavor set-preemptible p.small; '
        'openstack flavor unset --property resources:PCPU p.small, or make '
        'the flavor normal')


@pytest.mark.parametrize('specs', [
    {'resources:PCPU': '1'},
    {'hw:cpu_policy': 'dedicated'},
    {'resources:CUSTOM_GPU': '1'},
    {'resources:CUSTOM_PREEMPTIBLE_VCPU': '0'},
])
def test_odd_specs_are_refused_with_their_fix(specs):
    line = flavor_spec.refusal(_twin(**specs))

    assert line.startswith('flavor p.small is marked opie:preemptible=true '
                           'but ')
    assert '; fix: ' in line
    assert len(line.splitlines()) == 1


def test_a_refusal_stays_one_line_whatever_the_name():
    flavor = _marked_only(flavor_spec.Flavor('p\u2028x\n', 1, 512, 1))

    assert 'flavor p\\u2028x\\n is marked' in flavor_spec.refusal(flavor)
    assert len(flavor_spec.refusal(flavor).splitlines()) == 1


def test_custom_classes_without_the_mark_are_reported():
    flavor = _twin(**{'opie:preemptible': 'false'})

    [problem] = flavor_spec.check(flavor)

    assert 'but is not marked opie:preemptible=true' in problem.message
    assert 'resources:CUSTOM_PREEMPTIBLE_VCPU' in problem.message


def test_a_missing_override_of_a_zero_size_is_what_nova_asks_anyway():
    # Nova requests no DISK_GB for a diskless flavor and strips zero
    # custom amounts, so both keys may be left out.
    diskless = flavor_spec.Flavor('p.tiny', 1, 512, 0)
    specs = flavor_spec.preemptible_specs(diskless)
    del specs['resources:DISK_GB']
    del specs['resources:CUSTOM_PREEMPTIBLE_DISK_GB']

    assert flavor_spec.check(flavor_spec.Flavor('p.tiny', 1, 512, 0, 0, 0,
                                                specs)) == []


@pytest.mark.parametrize('value, marked', [
    ('true', True), (' True ', True), ('1', True), ('yes', True),
    ('false', False), ('', False), ('no', False)])
def test_mark_values_read_as_the_scheduler_reads_them(value, marked):
    specs = {contract.PREEMPTIBLE_SPEC: value}
    assert contract.is_preemptible(specs) is marked
