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

"""Nova's own code agrees with what OPIE knows of it without Nova.

``opie-manage`` and the core read nova.conf, write provider configs and
check flavors in environments without Nova, from copies of Nova's option
declarations, class paths and resource rules. Each copy is checked here
against the installed Nova's code.
"""
import importlib

from nova.compute import provider_config as nova_provider_config
import nova.conf
from nova import exception
from nova import objects
from nova.scheduler import utils as scheduler_utils
from nova.virt import hardware
import pytest

from opie.cmd import nova_conf
from opie.core import flavor_spec
from opie.core import preemptible
from opie.core import provider_config
from opie.core import resources as res
from opie.core import sizing


def test_nova_conf_declarations_match_novas():
    """Also pybasedir: found without importing Nova, as Nova sets it."""
    for group, opts in nova_conf.OPTS.items():
        for opt in opts:
            theirs = nova.conf.CONF._get_opt_info(opt.dest, group)['opt']
            assert type(theirs) is type(opt), opt.dest
            assert theirs.default == opt.default, opt.dest


def test_the_class_paths_the_audit_checks_exist():
    for path in (nova_conf.FILTER_PATH,) + nova_conf.WEIGHERS:
        module, _, name = path.rpartition('.')
        assert getattr(importlib.import_module(module), name)


def test_nova_reads_the_provider_config(tmp_path):
    """Nova's own provider config loader reads the written file."""
    total = res.Resources(16, 65536, 500)
    ratios = res.Resources(4.0, 1.5, 1.0)
    reserved = res.Resources(2, 4096, 10)
    (tmp_path / 'opie.yaml').write_text(provider_config.dump(
        provider_config.build(total, ratios, reserved), total, ratios,
        reserved))

    providers = nova_provider_config.get_provider_configs(str(tmp_path))

    additional = providers['$COMPUTE_NODE']['inventories']['additional']
    assert {name for entry in additional for name in entry} == {
        preemptible.HOST_TOKEN, *preemptible.CUSTOM}


def test_nova_asks_placement_for_custom_classes_only():
    """Nova's own ResourceRequest turns the specs into the right query."""
    small = flavor_spec.Flavor('m1.small', vcpus=1, memory_mb=2048,
                               root_gb=20, ephemeral_gb=5, swap_mb=1500)
    nova_flavor = objects.Flavor(
        vcpus=1, memory_mb=2048, root_gb=20, ephemeral_gb=5, swap=1500,
        extra_specs=flavor_spec.preemptible_specs(small))

    asked = scheduler_utils.resources_from_flavor_and_bfv(nova_flavor, False)

    assert asked == dict(zip(preemptible.CUSTOM, small.size()))


@pytest.mark.parametrize('spec', [
    '0-3,^2', '0-7,^2-5', ' 1 , 3 ,,', '^1,0-2', '0-3,^0-3', '1_0', '+3',
    '3-1', '-1', '2-', '^', '^-3', '1-^3', 'one', '0x1', ' - ', '',
    '0-15,^9000', '0-3,^2-99999',
])
def test_cpu_sets_are_read_as_nova_reads_them(spec):
    """The same CPUs, or both refuse the spec."""
    try:
        theirs = hardware.parse_cpu_spec(spec)
    except exception.Invalid:
        with pytest.raises(ValueError):
            sizing.parse_cpu_spec('cpu_shared_set', spec)
    else:
        assert sizing.parse_cpu_spec('cpu_shared_set', spec) == theirs
