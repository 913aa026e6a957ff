"""What a preemptible flavor must ask of Placement, and checking it."""
import pytest

from opie.core import flavor_spec
from opie.core import preemptible as rc

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
    assert found[0].fix.startswith('openstack flavor ')


def test_fix_sets_the_expected_value():
    found = flavor_spec.check(_twin(**{'resources:VCPU': '2'}))

    assert found[0].fix == ('openstack flavor set --property '
                            'resources:VCPU=0 p.small')


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


@pytest.mark.parametrize('value, preemptible', [
    ('true', True), (' True ', True), ('1', True), ('yes', True),
    ('false', False), ('', False), ('no', False)])
def test_mark_values_read_as_the_scheduler_reads_them(value, preemptible):
    assert rc.is_preemptible({rc.PREEMPTIBLE_SPEC: value}) is preemptible


def test_nova_asks_placement_for_custom_classes_only():
    """Nova's own ResourceRequest turns the specs into the right query."""
    objects = pytest.importorskip('nova.objects')
    scheduler_utils = pytest.importorskip('nova.scheduler.utils')
    objects.register_all()
    nova_flavor = objects.Flavor(
        vcpus=1, memory_mb=2048, root_gb=20, ephemeral_gb=5, swap=1500,
        extra_specs=flavor_spec.preemptible_specs(SMALL))

    asked = scheduler_utils.resources_from_flavor_and_bfv(nova_flavor, False)

    assert asked == dict(zip(rc.CUSTOM, SMALL.size()))
