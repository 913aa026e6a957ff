"""The DevStack plugin, run phase by phase with DevStack's functions
stubbed (``fake_devstack.sh``): the nova.conf files and provider.yaml it
leaves, and the services it (re)starts.

Each test prints the files it checks, so ``pytest -s`` shows them.
"""
import datetime
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
import yaml

from opie.cmd import audit_conf
from opie.cmd import nova_conf
from opie.cmd import provider_config
from tests.unit.devstack import inifile

TESTS_DIR = pathlib.Path(__file__).parent
PLUGIN_DIR = TESTS_DIR.parents[2] / 'devstack'
# What DevStack's create_nova_conf leaves for the scheduler (its FILTERS).
NOVA_CONF = textwrap.dedent("""\
    [DEFAULT]
    state_path = {data}/nova
    [filter_scheduler]
    enabled_filters = ComputeFilter,ComputeCapabilitiesFilter,\
ImagePropertiesFilter,ServerGroupAntiAffinityFilter,\
ServerGroupAffinityFilter,SameHostFilter,DifferentHostFilter
    """)
NOVA_CPU_CONF = textwrap.dedent("""\
    [DEFAULT]
    state_path = {data}/nova
    instances_path = {data}/nova/instances
    """)
# opie-manage with the cloud left out: flavor creation is recorded (the
# functional tests create flavors for real), the rest runs.
OPIE_MANAGE = textwrap.dedent("""\
    #!/bin/bash
    echo "opie-manage $*" >> {calls}
    if [[ "$1" != flavor ]]; then
        exec {python} -m opie.cmd.manage "$@"
    fi
    """)
ALL_IN_ONE = 'n-api,n-sch,n-cond,n-cpu,placement-api,key,g-api'


class DevStack:
    """A DevStack host in a temporary directory."""

    def __init__(self, tmp_path, services, **settings):
        self.tmp = tmp_path
        self.data = tmp_path / 'data'
        (self.data / 'nova' / 'instances').mkdir(parents=True)
        self.etc = tmp_path / 'etc' / 'nova'
        self.etc.mkdir(parents=True)
        self.nova_conf = self.etc / 'nova.conf'
        self.nova_cpu_conf = self.etc / 'nova-cpu.conf'
        self.nova_conf.write_text(NOVA_CONF.format(data=self.data))
        self.nova_cpu_conf.write_text(NOVA_CPU_CONF.format(data=self.data))
        self.calls = tmp_path / 'calls'
        self.calls.write_text('')
        self.bin = tmp_path / 'bin'
        self.bin.mkdir()
        manage = self.bin / 'opie-manage'
        manage.write_text(OPIE_MANAGE.format(calls=self.calls,
                                             python=sys.executable))
        manage.chmod(0o755)
        self.provider_yaml = self.etc / 'provider_config' / 'opie.yaml'
        self.env = dict(
            os.environ, PYTHON=sys.executable, TESTS_DIR=str(TESTS_DIR),
            CALLS=str(self.calls), ENABLED_SERVICES=services,
            DEST=str(tmp_path / 'opt'), NOVA_CONF=str(self.nova_conf),
            NOVA_CPU_CONF=str(self.nova_cpu_conf), NOVA_BIN_DIR=str(self.bin),
            OPIE_PROVIDER_CONFIG_DIR=str(self.provider_yaml.parent),
            KEYSTONE_SERVICE_URI='http://keystone/identity',
            SERVICE_PASSWORD='secret', SERVICE_PROJECT_NAME='service',
            SERVICE_DOMAIN_NAME='Default')
        self.env.update(dict(VIRT_DRIVER='libvirt', **settings)
                        if 'VIRT_DRIVER' not in settings else settings)

    def run(self, *phases, between=''):
        """Source settings, then plugin.sh for each phase, as stack.sh
        does (errexit on); ``between`` runs after post-config."""
        script = ['set -o errexit -o pipefail',
                  'source %s/fake_devstack.sh' % TESTS_DIR,
                  'source %s/settings' % PLUGIN_DIR]
        for phase in phases:
            script.append('source %s/plugin.sh %s' % (PLUGIN_DIR, phase))
            if phase == 'stack post-config':
                script.append(between)
        proc = subprocess.run(['bash', '-c', '\n'.join(script)],
                              env=self.env, capture_output=True, text=True)
        print(proc.stdout, proc.stderr)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def stack(self, between=''):
        return self.run('stack install', 'stack post-config', 'stack extra',
                        between=between)

    def show(self):
        for path in (self.nova_conf, self.nova_cpu_conf, self.provider_yaml,
                     self.calls):
            print('==== %s\n%s' % (path, path.read_text()
                                   if path.exists() else '(absent)'))

    def call_lines(self):
        return self.calls.read_text().splitlines()

    def conf(self, path):
        return nova_conf.load([str(path)])

    def inventories(self):
        return provider_config.custom_inventories(
            yaml.safe_load(self.provider_yaml.read_text()))

    def audit(self, path, role):
        return audit_conf.check(self.conf(path), (role,),
                                datetime.datetime.now(datetime.timezone.utc))


def test_all_in_one(tmp_path):
    devstack = DevStack(tmp_path, ALL_IN_ONE)

    devstack.stack()

    devstack.show()
    conf = devstack.conf(devstack.nova_conf)
    assert conf.filter_scheduler.available_filters == [
        'nova.scheduler.filters.all_filters',
        'opie.nova.filters.PreemptibleFilter']
    assert conf.filter_scheduler.enabled_filters == [
        'ComputeFilter', 'ComputeCapabilitiesFilter',
        'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
        'ServerGroupAffinityFilter', 'SameHostFilter', 'DifferentHostFilter',
        'PreemptibleFilter']
    assert conf.filter_scheduler.weight_classes == [
        'nova.scheduler.weights.all_weighers',
        'opie.nova.weights.overcommit.OvercommitWeigher',
        'opie.nova.weights.preemption_cost.PreemptionCostWeigher']
    assert (conf.opie.costs, conf.opie.billing_period,
            conf.opie.termination_mode, conf.opie.max_victims) == (
        'period', 3600, 'delete', 0)
    assert conf.opie.auth_type is None
    cpu_conf = devstack.conf(devstack.nova_cpu_conf)
    assert cpu_conf.compute.provider_config_location == str(
        devstack.provider_yaml.parent)
    inventories = devstack.inventories()
    assert inventories['CUSTOM_PREEMPTIBLE_VCPU']['total'] == os.cpu_count()
    assert inventories['CUSTOM_PREEMPTIBLE_VCPU']['allocation_ratio'] == 4.0
    assert inventories['CUSTOM_PREEMPTIBLE_MEMORY_MB']['reserved'] == 512
    bin_dir = devstack.bin
    assert devstack.call_lines() == [
        'setup_develop %s/opt/opie' % tmp_path,
        'opie-manage nova-conf scheduler --config-file %s --costs period '
        '--billing-period 3600 --max-victims 0 --termination-mode delete'
        % devstack.nova_conf,
        'opie-manage nova-conf compute --config-file %s '
        '--provider-config-dir %s --termination-mode delete' % (
            devstack.nova_cpu_conf, devstack.provider_yaml.parent),
        'opie-manage provider-config --config-file %s --output %s' % (
            devstack.nova_cpu_conf, devstack.provider_yaml),
        'opie-manage provider-config --config-file %s --output %s.new' % (
            devstack.nova_cpu_conf, devstack.provider_yaml),
        'stop_process n-sch',
        'run_process n-sch %s/opie-scheduler --config-file %s' % (
            bin_dir, devstack.nova_conf),
        'opie-manage flavor create-preemptible m1.tiny '
        '--os-cloud devstack-admin',
        'opie-manage flavor create-preemptible m1.small '
        '--os-cloud devstack-admin',
        'opie-manage flavor create-preemptible m1.medium '
        '--os-cloud devstack-admin']
    # What opie-manage audit says of the result: the compute is right, and
    # on the scheduler only the heartbeat of the (stubbed) opie-scheduler
    # is missing.
    assert devstack.audit(devstack.nova_cpu_conf, audit_conf.COMPUTE) == []
    [problem] = devstack.audit(devstack.nova_conf, audit_conf.SCHEDULER)
    assert problem.message.startswith('no heartbeat in %s/nova/'
                                      'opie-scheduler.heartbeat'
                                      % devstack.data)


def test_shelve_mode_with_the_fake_driver_and_a_late_ratio(tmp_path):
    devstack = DevStack(tmp_path, ALL_IN_ONE, VIRT_DRIVER='fake',
                        OPIE_TERMINATION_MODE='shelve',
                        OPIE_COSTS='period=1,count=60',
                        OPIE_FLAVORS='m1.small',
                        # Passed to opie-manage as one argument.
                        SERVICE_PASSWORD='two words')
    # A local.conf [[post-config|$NOVA_CPU_CONF]] section, merged (with
    # iniset) by stack.sh after the plugin's post-config phase.
    late_ratio = ('iniset %s DEFAULT cpu_allocation_ratio 16.0'
                  % devstack.nova_cpu_conf)

    devstack.stack(between=late_ratio)

    devstack.show()
    conf = devstack.conf(devstack.nova_conf)
    assert (conf.opie.termination_mode, conf.opie.costs) == (
        'shelve', 'period=1,count=60')
    # The auth plugin's own options are registered only when it loads.
    assert [inifile.get(str(devstack.nova_conf), 'opie', option)
            for option in ('auth_type', 'auth_url', 'username', 'password',
                           'project_name', 'user_domain_name')] == [
        ['password'], ['http://keystone/identity'], ['nova'], ['two words'],
        ['service'], ['Default']]
    assert devstack.conf(devstack.nova_cpu_conf).shelved_offload_time == 0
    inventories = devstack.inventories()
    assert [inventories[rc]['total'] for rc in sorted(inventories)] == [
        1, 600000, 800000, 1000]
    assert inventories['CUSTOM_PREEMPTIBLE_VCPU']['allocation_ratio'] == 16.0
    assert not devstack.provider_yaml.with_suffix('.yaml.new').exists()
    calls = devstack.call_lines()
    assert 'systemctl restart devstack@n-cpu.service' in calls
    assert calls.index('systemctl restart devstack@n-cpu.service') < (
        calls.index('stop_process n-sch'))
    assert devstack.audit(devstack.nova_cpu_conf, audit_conf.COMPUTE) == []


def test_compute_only_node(tmp_path):
    devstack = DevStack(tmp_path, 'n-cpu,q-agt')
    before = devstack.nova_conf.read_text()

    devstack.stack()

    devstack.show()
    assert devstack.nova_conf.read_text() == before
    assert len(devstack.inventories()) == 4
    assert [c.split()[:2] for c in devstack.call_lines()] == [
        ['setup_develop', '%s/opt/opie' % tmp_path],
        ['opie-manage', 'nova-conf'], ['opie-manage', 'provider-config'],
        ['opie-manage', 'provider-config']]


def test_controller_without_compute_writes_no_provider_config(tmp_path):
    devstack = DevStack(tmp_path, 'n-api,n-sch,n-cond')

    devstack.stack()

    assert not devstack.provider_yaml.exists()
    assert 'provider_config_location' not in (
        devstack.nova_cpu_conf.read_text())
    assert 'run_process n-sch %s/opie-scheduler --config-file %s' % (
        devstack.bin, devstack.nova_conf) in devstack.call_lines()


def test_configuring_twice_adds_nothing_twice(tmp_path):
    devstack = DevStack(tmp_path, ALL_IN_ONE)
    devstack.stack()
    once = devstack.nova_conf.read_text()

    devstack.run('stack post-config')

    assert devstack.nova_conf.read_text() == once


def test_operator_filters_are_kept(tmp_path):
    devstack = DevStack(tmp_path, ALL_IN_ONE)
    devstack.nova_conf.write_text(
        '[filter_scheduler]\navailable_filters = my.filters.all\n'
        'weight_classes = my.weights.Heavy\n')

    devstack.run('stack post-config')

    devstack.show()
    conf = devstack.conf(devstack.nova_conf).filter_scheduler
    assert conf.available_filters == ['my.filters.all',
                                      'opie.nova.filters.PreemptibleFilter']
    assert conf.weight_classes[0] == 'my.weights.Heavy'
    # Nova's default filters where DevStack set none.
    assert conf.enabled_filters[0] == 'ComputeFilter'
    assert conf.enabled_filters[-1] == 'PreemptibleFilter'


def test_clean_removes_the_provider_config(tmp_path):
    devstack = DevStack(tmp_path, ALL_IN_ONE)
    devstack.stack()

    devstack.run('clean')

    assert not devstack.provider_yaml.exists()


def test_plugin_disabled_does_nothing(tmp_path):
    devstack = DevStack(tmp_path, ALL_IN_ONE)
    before = devstack.nova_conf.read_text()

    # Without settings, nothing enables the opie service.
    script = ('source %s/fake_devstack.sh; '
              'source %s/plugin.sh stack post-config'
              % (TESTS_DIR, PLUGIN_DIR))
    subprocess.run(['bash', '-c', script], env=devstack.env, check=True)

    assert devstack.nova_conf.read_text() == before
    assert devstack.calls.read_text() == ''


def _run_failing(devstack, phase):
    script = ('set -o errexit; source %s/fake_devstack.sh; '
              'source %s/settings; source %s/plugin.sh %s'
              % (TESTS_DIR, PLUGIN_DIR, PLUGIN_DIR, phase))
    return subprocess.run(['bash', '-c', script], env=devstack.env,
                          capture_output=True, text=True)


@pytest.mark.parametrize('phase', ['stack post-config', 'stack extra'])
def test_a_failing_opie_manage_stops_stack_sh(tmp_path, phase):
    devstack = DevStack(tmp_path, 'n-cpu', OPIE_PROVIDER_MEMORY_MB='100')

    proc = _run_failing(devstack, phase)

    assert proc.returncode == 2
    assert ('opie-manage provider-config: error: '
            'CUSTOM_PREEMPTIBLE_MEMORY_MB: 512 reserved is more than the '
            'total 100') in proc.stderr


@pytest.mark.parametrize('settings, message', [
    (dict(OPIE_COSTS='period,bogus'), "--costs period,bogus: unknown cost "
     "plugin 'bogus'"),
    (dict(OPIE_MAX_VICTIMS='-1'),
     '--max-victims -1: Should be greater than or equal to 0'),
    (dict(OPIE_TERMINATION_MODE='kill'), '--termination-mode kill: Valid '
     "values are [delete, shelve], but found 'kill'"),
])
def test_a_bad_setting_stops_stack_sh_before_nova_conf_changes(
        tmp_path, settings, message):
    devstack = DevStack(tmp_path, 'n-sch', **settings)
    before = devstack.nova_conf.read_text()

    proc = _run_failing(devstack, 'stack post-config')

    assert proc.returncode == 2
    [line] = proc.stderr.splitlines()
    assert line.startswith('opie-manage nova-conf: error: %s' % message)
    assert devstack.nova_conf.read_text() == before
