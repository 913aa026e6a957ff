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

"""The DevStack plugin, run by a stub DevStack (``fake_devstack.sh``) that
does what stack.sh does around it, in DevStack's order: the plugin's
settings, install, post-config, the merge of local.conf's
``[[post-config|FILE]]`` blocks, the start of Nova (nova-cpu.conf made from
nova.conf, the computes as ``devstack@n-cpu.service`` or, with the fake
driver, ``devstack@n-cpu-1..N.service``), the ``[[extra|FILE]]`` merge, the
extra phase. Each test checks the nova.conf, nova-cpu.conf and
provider.yaml left and the systemd units (re)started, and prints them
(shown on failure, and with ``pytest -s``)::

    python -m tests.unit.devstack.test_plugin   # the sample local.conf
"""
import argparse
import contextlib
import datetime
import io
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap

import pytest
import yaml

from opie.cmd import audit_conf
from opie.cmd import nova_conf
from opie.cmd import nova_conf_command
from opie.core import provider_config
from tests.unit.devstack import inifile

TESTS_DIR = pathlib.Path(__file__).parent
SOURCE = TESTS_DIR.parents[2]
PLUGIN_DIR = SOURCE / 'devstack'
SAMPLE = PLUGIN_DIR / 'local.conf.sample'
# opie-manage with the cloud left out: flavor creation is recorded (the
# functional tests create flavors for real), the rest runs.
OPIE_MANAGE = textwrap.dedent("""\
    #!/bin/bash
    echo "opie-manage $*" >> {calls}
    if [[ "$1" != flavor ]]; then
        exec {python} -m opie.cmd.manage "$@"
    fi
    """)
ALL_IN_ONE = 'key,g-api,placement-api,n-api,n-sch,n-cond,n-cpu'
ENABLE = 'enable_plugin opie https://opendev.org/x/opie\n'
DEVSTACK_FILTERS = [
    'ComputeFilter', 'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
    'ServerGroupAntiAffinityFilter', 'ServerGroupAffinityFilter',
    'SameHostFilter', 'DifferentHostFilter']
OPIE_WEIGHERS = ['opie.nova.weights.overcommit.OvercommitWeigher',
                 'opie.nova.weights.preemption_cost.PreemptionCostWeigher']
# The fake virt driver's host (nova.virt.fake.FakeDriver).
FAKE_HOST = {'CUSTOM_PREEMPTIBLE_VCPU': 1000,
             'CUSTOM_PREEMPTIBLE_MEMORY_MB': 800000,
             'CUSTOM_PREEMPTIBLE_DISK_GB': 600000}


def _password_on_command_line():
    """Whether opie-manage nova-conf scheduler still takes the service
    user's password (shelve mode is moving to Nova's [service_user])."""
    parser = argparse.ArgumentParser()
    nova_conf_command.register(parser.add_subparsers())
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            parser.parse_args(['nova-conf', 'scheduler', '--config-file',
                               'nova.conf', '--password', 'secret'])
    except SystemExit:
        return False
    return True


def local_conf(localrc='', *blocks):
    return '[[local|localrc]]\n%s%s\n%s' % (
        ENABLE, textwrap.dedent(localrc),
        ''.join(textwrap.dedent(block) for block in blocks))


class DevStack:
    """A DevStack host in a temporary directory, stacked with a local.conf.
    """

    def __init__(self, tmp_path, conf, services=ALL_IN_ONE):
        self.tmp = tmp_path
        self.top = tmp_path / 'devstack'
        self.top.mkdir()
        (self.top / 'local.conf').write_text(conf)
        self.dest = tmp_path / 'opt'
        self.data = tmp_path / 'data'
        self.etc = tmp_path / 'etc' / 'nova'
        self.nova_conf = self.etc / 'nova.conf'
        self.nova_cpu_conf = self.etc / 'nova-cpu.conf'
        self.provider_yaml = self.etc / 'provider_config' / 'opie.yaml'
        self.systemd = tmp_path / 'systemd'
        self.calls = tmp_path / 'calls'
        self.calls.write_text('')
        self.bin = tmp_path / 'bin'
        self.bin.mkdir()
        manage = self.bin / 'opie-manage'
        manage.write_text(OPIE_MANAGE.format(calls=self.calls,
                                             python=sys.executable))
        manage.chmod(0o755)
        self.env = dict(
            PATH=os.environ['PATH'], HOME=str(tmp_path), LANG='C.UTF-8',
            PYTHONPATH=str(SOURCE), PYTHON=sys.executable,
            TESTS_DIR=str(TESTS_DIR), CALLS=str(self.calls),
            PLUGIN_SOURCE=str(SOURCE), TOP_DIR=str(self.top),
            DEST=str(self.dest), DATA_DIR=str(self.data),
            NOVA_CONF_DIR=str(self.etc), NOVA_BIN_DIR=str(self.bin),
            SYSTEMD_DIR=str(self.systemd), ENABLED_SERVICES=services)

    def run(self, script, check=True):
        proc = subprocess.run(
            ['bash', '-c', 'set -o errexit -o pipefail\nsource %s\n%s' % (
                TESTS_DIR / 'fake_devstack.sh', script)],
            env=self.env, cwd=SOURCE, capture_output=True, text=True)
        print(proc.stdout, proc.stderr)
        # bash 5 complains so when errexit leaves a script sourced in a
        # function (plugin.sh in run_phase), as in stack.sh.
        proc.stderr = ''.join(
            line for line in proc.stderr.splitlines(keepends=True)
            if 'pop_var_context: head of shell_variables' not in line)
        if check:
            assert proc.returncode == 0, proc.stderr
        return proc

    def stack(self, check=True):
        """./stack.sh; the CompletedProcess."""
        return self.run('stack_sh', check)

    def show(self):
        """Print what the plugin wrote and the units started."""
        paths = [self.nova_conf, self.nova_cpu_conf]
        paths += sorted(self.etc.glob('nova-fake.conf-*'))
        paths += [self.provider_yaml]
        for path in paths:
            print('==== %s\n%s' % (path, path.read_text()
                                   if path.exists() else '(absent)'))
        for unit in sorted(self.systemd.glob('devstack@*')):
            print('==== %s\n%s' % (unit, unit.read_text()))
        print('==== systemctl start/stop/restart by phase')
        for phase, units in self.units_by_phase().items():
            print('%s: %s' % (phase, ', '.join(units) or '-'))

    def call_lines(self, phase=None):
        """The calls recorded, of one step of stack.sh if given."""
        lines, current = [], None
        for line in self.calls.read_text().splitlines():
            if line.startswith(('phase ', 'merge ', 'start_nova')):
                current = line
            elif phase in (None, current):
                lines.append(line)
        return lines

    def units(self, phase):
        """``verb unit`` of each systemctl start, stop or restart."""
        return [line.split(' ', 1)[1] for line in self.call_lines(phase)
                if line.split()[:2] in (['systemctl', 'start'],
                                        ['systemctl', 'stop'],
                                        ['systemctl', 'restart'])]

    def units_by_phase(self):
        phases = {}
        for line in self.calls.read_text().splitlines():
            if line.startswith(('phase ', 'merge ', 'start_nova')):
                phases.setdefault(line, [])
        return {phase: self.units(phase) for phase in phases}

    def exec_start(self, service):
        unit = self.systemd / ('devstack@%s.service' % service)
        return inifile.get(str(unit), 'Service', 'ExecStart')

    def conf(self, path):
        return nova_conf.load([str(path)])

    def inventories(self):
        return provider_config.custom_inventories(
            yaml.safe_load(self.provider_yaml.read_text()))

    def audit(self, path, role):
        return audit_conf.check(self.conf(path), (role,),
                                datetime.datetime.now(datetime.timezone.utc))


@pytest.mark.usefixtures('installed_nova')
def test_sample_local_conf_three_fake_computes_own_filters(tmp_path):
    """devstack/local.conf.sample: three fake computes, a
    [[post-config|$NOVA_CONF]] block setting enabled_filters and a
    [[post-config|$NOVA_CPU_CONF]] one setting overcommit."""
    devstack = DevStack(tmp_path, SAMPLE.read_text())

    stdout = devstack.stack().stdout

    devstack.show()
    # nova.conf: the block's filters, PreemptibleFilter added back in the
    # extra phase, with a warning.
    conf = devstack.conf(devstack.nova_conf)
    assert conf.filter_scheduler.enabled_filters == DEVSTACK_FILTERS[:5] + [
        'PreemptibleFilter']
    assert conf.filter_scheduler.available_filters == [
        'nova.scheduler.filters.all_filters',
        'opie.nova.filters.PreemptibleFilter']
    assert conf.filter_scheduler.weight_classes == [
        'nova.scheduler.weights.all_weighers'] + OPIE_WEIGHERS
    assert (conf.opie.costs, conf.opie.billing_period,
            conf.opie.termination_mode, conf.opie.max_victims) == (
        'period', 3600, 'delete', 0)
    assert ("WARNING: OPIE: a local.conf [[post-config|$NOVA_CONF]] block "
            "set [filter_scheduler] without OPIE's filter or weighers; added "
            "them to its lists in %s" % devstack.nova_conf) in stdout
    # nova-cpu.conf: DevStack's copy of nova.conf with the compute block,
    # then OPIE's compute settings.
    cpu_conf = devstack.conf(devstack.nova_cpu_conf)
    assert cpu_conf.compute.provider_config_location == str(
        devstack.provider_yaml.parent)
    assert (cpu_conf.cpu_allocation_ratio,
            cpu_conf.reserved_host_memory_mb) == (8.0, 1024)
    assert inifile.get(str(devstack.nova_cpu_conf), 'database',
                       'connection') == []
    for i in (1, 2, 3):
        fake_conf = str(devstack.etc / ('nova-fake.conf-%d' % i))
        assert inifile.get(fake_conf, 'DEFAULT', 'host') == ['devstack%d' % i]
    # provider.yaml, one for the three computes ($COMPUTE_NODE): the fake
    # host with the block's ratio and reserved memory.
    inventories = devstack.inventories()
    assert {rc: inventories[rc]['total'] for rc in FAKE_HOST} == FAKE_HOST
    assert inventories['CUSTOM_PREEMPTIBLE_VCPU']['allocation_ratio'] == 8.0
    assert inventories['CUSTOM_PREEMPTIBLE_MEMORY_MB']['reserved'] == 1024
    # The units: DevStack starts n-cpu-1..3; the plugin restarts them and
    # replaces nova-scheduler under the same unit.
    assert devstack.units('start_nova') == [
        'start devstack@n-sch.service', 'start devstack@n-cond.service',
        'start devstack@n-cpu-1.service', 'start devstack@n-cpu-2.service',
        'start devstack@n-cpu-3.service']
    assert devstack.units('phase stack extra') == [
        'restart devstack@n-cpu-1.service',
        'restart devstack@n-cpu-2.service',
        'restart devstack@n-cpu-3.service',
        'stop devstack@n-sch.service', 'start devstack@n-sch.service']
    assert devstack.exec_start('n-sch') == [
        '%s/opie-scheduler --config-file %s' % (devstack.bin,
                                                devstack.nova_conf)]
    assert devstack.exec_start('n-cpu-2') == [
        '%s/nova-compute --config-file %s --config-file %s/'
        'nova-fake.conf-2' % (devstack.bin, devstack.nova_cpu_conf,
                              devstack.etc)]
    assert [line for line in devstack.call_lines('phase stack extra')
            if line.startswith('opie-manage')] == [
        'opie-manage nova-conf compute --config-file %s '
        '--provider-config-dir %s --termination-mode delete' % (
            devstack.nova_cpu_conf, devstack.provider_yaml.parent),
        'opie-manage provider-config --config-file %s --vcpus 1000 '
        '--memory-mb 800000 --disk-gb 600000 --output %s' % (
            devstack.nova_cpu_conf, devstack.provider_yaml),
        'opie-manage nova-conf scheduler --config-file %s'
        % devstack.nova_conf] + [
        'opie-manage flavor create-preemptible %s --os-cloud devstack-admin'
        % flavor for flavor in ('m1.tiny', 'm1.small', 'm1.medium')]
    assert devstack.call_lines('phase stack install') == [
        'setup_develop %s/opie' % devstack.dest]
    # What opie-manage audit says: the computes are right; on the
    # scheduler only the heartbeat of the (stubbed) opie-scheduler is
    # missing.
    assert devstack.audit(devstack.nova_cpu_conf, audit_conf.COMPUTE) == []
    [problem] = devstack.audit(devstack.nova_conf, audit_conf.SCHEDULER)
    assert problem.message.startswith('no heartbeat in ')
    # There is no devstack@n-cpu.service with the fake driver.
    proc = devstack.run('$SYSTEMCTL restart devstack@n-cpu.service',
                        check=False)
    assert proc.returncode == 5
    assert 'Unit devstack@n-cpu.service not found' in proc.stderr


def test_libvirt_compute_and_operator_scheduler_settings(tmp_path):
    devstack = DevStack(tmp_path, local_conf(
        'OPIE_COSTS=period=1,count=60\n', """\
        [[post-config|$NOVA_CONF]]
        [filter_scheduler]
        available_filters = nova.scheduler.filters.all_filters
        available_filters = my.filters.Mine
        [opie]
        max_victims = 3
        [[post-config|$NOVA_CPU_CONF]]
        [DEFAULT]
        cpu_allocation_ratio = 16.0
        """))

    stdout = devstack.stack().stdout

    devstack.show()
    conf = devstack.conf(devstack.nova_conf)
    # A multi-valued list from local.conf, OPIE's filter added back; the
    # [opie] option the block set is kept.
    assert conf.filter_scheduler.available_filters == [
        'nova.scheduler.filters.all_filters', 'my.filters.Mine',
        'opie.nova.filters.PreemptibleFilter']
    assert conf.filter_scheduler.enabled_filters == DEVSTACK_FILTERS + [
        'PreemptibleFilter']
    assert (conf.opie.costs, conf.opie.max_victims) == (
        'period=1,count=60', 3)
    assert 'WARNING: OPIE' in stdout
    inventories = devstack.inventories()
    assert inventories['CUSTOM_PREEMPTIBLE_VCPU']['total'] == os.cpu_count()
    assert inventories['CUSTOM_PREEMPTIBLE_VCPU']['allocation_ratio'] == 16.0
    assert devstack.units('start_nova') == [
        'start devstack@n-sch.service', 'start devstack@n-cond.service',
        'start devstack@n-cpu.service']
    assert devstack.units('phase stack extra') == [
        'restart devstack@n-cpu.service', 'stop devstack@n-sch.service',
        'start devstack@n-sch.service']
    assert devstack.audit(devstack.nova_cpu_conf, audit_conf.COMPUTE) == []


def test_without_post_config_blocks_no_warning(tmp_path):
    devstack = DevStack(tmp_path, local_conf('VIRT_DRIVER=fake\n'))

    stdout = devstack.stack().stdout

    assert 'WARNING' not in stdout
    assert devstack.conf(devstack.nova_conf).filter_scheduler.\
        enabled_filters == DEVSTACK_FILTERS + ['PreemptibleFilter']
    # One fake compute is still n-cpu-1.
    assert devstack.units('phase stack extra')[0] == (
        'restart devstack@n-cpu-1.service')


@pytest.mark.xfail(_password_on_command_line(), strict=True,
                   reason='opie-manage nova-conf scheduler still wants the '
                   "service user's password on its command line")
def test_shelve_mode_uses_novas_service_user(tmp_path):
    devstack = DevStack(tmp_path, local_conf(
        'VIRT_DRIVER=fake\nOPIE_TERMINATION_MODE=shelve\n'
        'SERVICE_PASSWORD="two words"\n'))

    devstack.stack()

    devstack.show()
    assert 'two words' not in devstack.calls.read_text()
    assert inifile.get(str(devstack.nova_conf), 'opie', 'password') == []
    assert inifile.get(str(devstack.nova_conf), 'service_user',
                       'password') == ['two words']
    assert devstack.conf(devstack.nova_conf).opie.termination_mode == (
        'shelve')
    assert devstack.conf(devstack.nova_cpu_conf).shelved_offload_time == 0
    assert devstack.audit(devstack.nova_cpu_conf, audit_conf.COMPUTE) == []


def test_shelve_mode_without_novas_service_user_stops_stack_sh(tmp_path):
    devstack = DevStack(tmp_path, local_conf(
        'OPIE_TERMINATION_MODE=shelve\nNOVA_USE_SERVICE_TOKEN=False\n'))

    proc = devstack.stack(check=False)

    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        "[ERROR] OPIE: OPIE_TERMINATION_MODE=shelve uses Nova's "
        "[service_user] credentials; DevStack writes them only with "
        "NOVA_USE_SERVICE_TOKEN=True")


def test_compute_only_node_then_clean(tmp_path):
    devstack = DevStack(tmp_path, local_conf('VIRT_DRIVER=fake\n'),
                        services='n-cpu,q-agt,placement-client')

    devstack.stack()

    devstack.show()
    assert 'opie' not in devstack.nova_conf.read_text()
    assert devstack.conf(devstack.nova_cpu_conf).compute.\
        provider_config_location == str(devstack.provider_yaml.parent)
    assert len(devstack.inventories()) == 4
    assert devstack.units('phase stack extra') == [
        'restart devstack@n-cpu-1.service']
    assert [c.split()[:2] for c in devstack.call_lines()
            if c.startswith('opie-manage')] == [
        ['opie-manage', 'nova-conf'], ['opie-manage', 'provider-config']]

    devstack.run('clean_sh')

    assert not devstack.provider_yaml.exists()


def test_controller_without_compute_writes_no_provider_config(tmp_path):
    devstack = DevStack(tmp_path, local_conf(),
                        services='key,n-api,n-sch,n-cond')

    devstack.stack()

    assert not devstack.provider_yaml.exists()
    # DevStack makes nova-cpu.conf all the same; OPIE leaves it.
    assert 'provider_config_location' not in (
        devstack.nova_cpu_conf.read_text())
    assert devstack.units('phase stack extra') == [
        'stop devstack@n-sch.service', 'start devstack@n-sch.service']
    assert devstack.exec_start('n-sch') == [
        '%s/opie-scheduler --config-file %s' % (devstack.bin,
                                                devstack.nova_conf)]


def test_without_enable_plugin_nothing_happens(tmp_path):
    devstack = DevStack(tmp_path, '[[local|localrc]]\nVIRT_DRIVER=fake\n')

    devstack.stack()

    assert 'opie' not in devstack.nova_conf.read_text().lower()
    assert not any(line.startswith(('opie-manage', 'setup_develop'))
                   for line in devstack.call_lines())
    assert devstack.units('phase stack extra') == []
    assert devstack.exec_start('n-sch') == [
        '%s/nova-scheduler --config-file %s' % (devstack.bin,
                                                devstack.nova_conf)]


def test_a_failing_opie_manage_stops_stack_sh(tmp_path):
    devstack = DevStack(tmp_path, local_conf('OPIE_PROVIDER_MEMORY_MB=100\n'))

    proc = devstack.stack(check=False)

    assert proc.returncode == 2
    assert ('opie-manage provider-config: error: '
            'CUSTOM_PREEMPTIBLE_MEMORY_MB: 512 reserved is more than the '
            'total 100') in proc.stderr
    assert devstack.units('phase stack extra') == []


@pytest.mark.parametrize('setting, message', [
    ('OPIE_COSTS=period,bogus', "--costs period,bogus: unknown cost "
     "plugin 'bogus'"),
    ('OPIE_MAX_VICTIMS=-1',
     '--max-victims -1: Should be greater than or equal to 0'),
    ('OPIE_TERMINATION_MODE=kill', '--termination-mode kill: Valid '
     "values are [delete, shelve], but found 'kill'"),
])
def test_a_bad_setting_stops_stack_sh_before_nova_conf_changes(
        tmp_path, setting, message):
    devstack = DevStack(tmp_path, local_conf(setting + '\n'),
                        services='n-sch')

    proc = devstack.stack(check=False)

    assert proc.returncode == 2
    [line] = proc.stderr.splitlines()
    assert line.startswith('opie-manage nova-conf: error: %s' % message)
    assert 'opie' not in devstack.nova_conf.read_text().lower()


if __name__ == '__main__':
    # Stack the sample local.conf and show what the plugin leaves.
    with tempfile.TemporaryDirectory() as tmp:
        sample = DevStack(pathlib.Path(tmp), SAMPLE.read_text())
        sample.stack()
        sample.show()
