"""``opie-manage flavor create-preemptible``: the twin's extra specs."""
import pytest

from opie.cmd import errors
from opie.cmd import flavors
from opie.core import flavor_spec


def test_twin_keeps_the_normal_specs_and_overrides_its_resources():
    normal = flavor_spec.Flavor('m1.large', 4, 8192, 80, extra_specs={
        'hw:mem_page_size': 'large', 'resources:VCPU': '4',
        'quota:disk_read_iops_sec': '500'})

    specs = flavors.twin_specs(normal)

    assert specs == dict(flavor_spec.preemptible_specs(normal), **{
        'hw:mem_page_size': 'large', 'quota:disk_read_iops_sec': '500'})
    assert specs['resources:VCPU'] == '0'
    assert normal.extra_specs['resources:VCPU'] == '4'
    twin = flavor_spec.Flavor('twin', 4, 8192, 80, extra_specs=specs)
    assert flavor_spec.check(twin) == []


@pytest.mark.parametrize('extra_specs, message', [
    ({'opie:preemptible': 'True'}, 'flavor f is already preemptible'),
    ({'hw:cpu_policy': 'dedicated'},
     'cannot make f preemptible: preemptible flavors cannot use CPU pinning'),
    ({'pci_passthrough:alias': 'a:1', 'resources1:PCPU': '2'},
     'cannot make f preemptible: preemptible flavors cannot use dedicated '
     'CPUs (PCPU) (resources1:PCPU=2): preempting frees only VCPU, '
     'MEMORY_MB and DISK_GB; preemptible flavors cannot use PCI devices'),
])
def test_flavors_preemption_cannot_serve_are_refused(extra_specs, message):
    normal = flavor_spec.Flavor('f', 1, 512, 1, extra_specs=extra_specs)

    with pytest.raises(errors.UsageError) as exc_info:
        flavors.twin_specs(normal)

    assert str(exc_info.value).startswith(message)
