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

"""``opie-manage flavor``: the preemptible twin's extra specs, the
terms of a preemptible flavor."""
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


def _marked(**extra_specs):
    return flavor_spec.Flavor('p.large', 4, 8192, 80, extra_specs=dict(
        {'opie:preemptible': 'true'}, **extra_specs))


def test_set_preemptible_sets_the_overrides_a_marked_flavor_lacks():
    flavor = _marked(**{'resources:VCPU': '0', 'hw:mem_page_size': 'large'})

    specs = flavors.specs_to_set(flavor)

    assert specs == {'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0',
                     'resources:CUSTOM_PREEMPTIBLE_VCPU': '4',
                     'resources:CUSTOM_PREEMPTIBLE_MEMORY_MB': '8192',
                     'resources:CUSTOM_PREEMPTIBLE_DISK_GB': '80'}
    fixed = _marked(**dict(flavor.extra_specs, **specs))
    assert flavor_spec.check(fixed) == []
    assert flavors.specs_to_set(fixed) == {}


@pytest.mark.parametrize('extra_specs, message', [
    ({'opie:preemptible': 'false'}, 'flavor p.large is not marked '
     'opie:preemptible=true: create its preemptible twin with opie-manage '
     'flavor create-preemptible p.large'),
    ({'resources:VGPU': '1'}, 'cannot make p.large preemptible: '
     'preemptible flavors cannot use a resource class OPIE does not model '
     '(resources:VGPU=1)'),
])
def test_set_preemptible_refuses_what_it_cannot_set_right(
        extra_specs, message):
    with pytest.raises(errors.UsageError) as exc_info:
        flavors.specs_to_set(_marked(**extra_specs))

    assert str(exc_info.value).startswith(message)


class _Source:
    """A novaclient flavor."""
    id = 'f1'
    name = 'p.large'
    vcpus, ram, disk, ephemeral, swap = 4, 8192, 80, 0, ''

    def __init__(self):
        self.extra_specs = {'opie:preemptible': 'true'}

    def set_keys(self, specs):
        self.extra_specs.update(specs)


def test_the_command_sets_the_flavor_right_then_leaves_it(
        monkeypatch, capsys):
    from opie.cmd import cloud
    from opie.cmd import manage
    source = _Source()
    conn = type('Conn', (), {'find_flavor': lambda self, name: source})()
    monkeypatch.setattr(cloud, 'connect', lambda args: conn)

    assert manage.main(['flavor', 'set-preemptible', 'p.large']) == 0
    assert manage.main(['flavor', 'set-preemptible', 'p.large']) == 0

    out = capsys.readouterr().out.splitlines()
    assert out[0] == ('set on flavor p.large (id f1), 4 vCPU, 8192 MB RAM, '
                      '80 GB disk:')
    assert '  resources:CUSTOM_PREEMPTIBLE_VCPU=4' in out
    assert out[-1] == ('flavor p.large (id f1) already is preemptible: left '
                       'unchanged')
    assert flavor_spec.check(cloud.flavor_of(source)) == []


def test_set_terms_sets_only_the_terms_given_and_changed():
    flavor = _marked(**{'opie:tier': '1'})

    assert flavors.terms_to_set(flavor, tier=1, minimum_uptime=600) == {
        'opie:minimum_uptime': '600'}
    assert flavors.terms_to_set(flavor, tier=2) == {'opie:tier': '2'}
    assert flavors.terms_to_set(flavor, minimum_uptime=0) == {
        'opie:minimum_uptime': '0'}
    assert flavors.terms_to_set(flavor, notice=120) == {
        'opie:notice': '120'}
    assert flavors.terms_to_set(flavor, maximum_lifetime=86400) == {
        'opie:maximum_lifetime': '86400'}


@pytest.mark.parametrize('extra_specs, tier, message', [
    ({}, None, 'give --tier, --minimum-uptime, --notice, '
     '--maximum-lifetime or several'),
    ({'opie:preemptible': 'no'}, 1, 'flavor p.large is not preemptible: '
     'terms of preemption mean nothing to its servers; create its '
     'preemptible twin with opie-manage flavor create-preemptible '
     'p.large'),
])
def test_set_terms_refuses_what_means_nothing(extra_specs, tier, message):
    with pytest.raises(errors.UsageError) as exc_info:
        flavors.terms_to_set(_marked(**extra_specs), tier=tier)

    assert str(exc_info.value) == message


def _run(monkeypatch, source, *argv):
    from opie.cmd import cloud
    from opie.cmd import manage
    conn = type('Conn', (), {'find_flavor': lambda self, name: source,
                             'flavors': lambda self: [source]})()
    monkeypatch.setattr(cloud, 'connect', lambda args: conn)
    return manage.main(list(argv))


def test_the_command_sets_the_terms_then_leaves_them(monkeypatch, capsys):
    source = _Source()
    argv = ('flavor', 'set-terms', 'p.large', '--tier', '2',
            '--minimum-uptime', '600')

    assert _run(monkeypatch, source, *argv) == 0
    assert _run(monkeypatch, source, *argv) == 0

    assert source.extra_specs == {'opie:preemptible': 'true',
                                  'opie:tier': '2',
                                  'opie:minimum_uptime': '600'}
    assert capsys.readouterr().out.splitlines() == [
        'set on flavor p.large (id f1): opie:minimum_uptime=600, '
        'opie:tier=2; servers already running keep the terms they were '
        'booted with until resized',
        'flavor p.large (id f1) already has these terms: left unchanged']


@pytest.mark.parametrize('option, value, reason', [
    ('--tier', '-1', 'must be >= 0, got -1'),
    ('--tier', '1001', 'must be <= 1000, got 1001'),
    ('--tier', 'high', "expected a whole number, got 'high'"),
    ('--minimum-uptime', '10m', "expected a whole number, got '10m'"),
    ('--minimum-uptime', '31536001', 'must be <= 31536000, got 31536001'),
    ('--notice', '901', 'must be <= 900, got 901'),
    ('--notice', '2m', "expected a whole number, got '2m'"),
    ('--maximum-lifetime', '-1', 'must be >= 0, got -1'),
    ('--maximum-lifetime', '31536001', 'must be <= 31536000, got 31536001'),
    ('--maximum-lifetime', '1d', "expected a whole number, got '1d'"),
])
def test_bad_terms_are_one_line_and_exit_2(monkeypatch, capsys, option,
                                           value, reason):
    source = _Source()

    with pytest.raises(SystemExit) as exc_info:
        _run(monkeypatch, source, 'flavor', 'set-terms', 'p.large',
             option, value)

    err = capsys.readouterr().err
    assert exc_info.value.code == 2
    assert len(err.splitlines()) == 1
    assert option in err and reason in err
    assert source.extra_specs == {'opie:preemptible': 'true'}


def test_list_shows_each_preemptible_flavor_its_terms_and_problems():
    twin = flavor_spec.preemptible_specs(flavor_spec.Flavor('', 1, 512, 1))
    found = flavors.terms_table([
        flavor_spec.Flavor('m1.tiny', 1, 512, 1),
        flavor_spec.Flavor('p.gold', 1, 512, 1, extra_specs=dict(
            twin, **{'opie:tier': '2', 'opie:minimum_uptime': '3600',
                     'opie:notice': '120',
                     'opie:maximum_lifetime': '86400'})),
        flavor_spec.Flavor('p.tiny', 1, 512, 1, extra_specs=dict(
            twin, **{'opie:minimum_uptime': 'soon',
                     'opie:maximum_lifetime': 'never'})),
    ])

    assert found == [
        'FLAVOR  SIZE                           TIER  MINIMUM UPTIME  '
        'NOTICE   MAXIMUM LIFETIME',
        'p.gold  1 vCPU, 512 MB RAM, 1 GB disk  2     3600 s          '
        '120 s    86400 s',
        'p.tiny  1 vCPU, 512 MB RAM, 1 GB disk  0     default         '
        'default  default',
        "flavor p.tiny: opie:minimum_uptime='soon' is not a whole number "
        "from 0 to 31536000, so the scheduler reads it as [opie] "
        "minimum_uptime (fix: opie-manage flavor set-terms p.tiny "
        "--minimum-uptime N)",
        "flavor p.tiny: opie:maximum_lifetime='never' is not a whole number "
        "from 0 to 31536000, so the scheduler reads it as [opie] "
        "maximum_lifetime (fix: opie-manage flavor set-terms p.tiny "
        "--maximum-lifetime N)"]
    assert flavors.terms_table([]) == ['no preemptible flavor']
