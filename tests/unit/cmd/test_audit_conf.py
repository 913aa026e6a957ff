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

"""``opie-manage audit --config-file``: each broken nova.conf, named."""
import datetime
import json
import os
from unittest import mock

import pytest
import yaml

from opie.cmd import audit_conf
from opie.cmd import manage
from opie.cmd import nova_conf
from opie.core import provider_config
from opie.core import resources as res
from opie.nova import conf as opie_conf
from opie.nova.periodic import heartbeat

GOOD = """\
[DEFAULT]
state_path = {tmp}
[filter_scheduler]
available_filters = nova.scheduler.filters.all_filters
available_filters = opie.nova.filters.PreemptibleFilter
enabled_filters = ComputeFilter,PreemptibleFilter
weight_classes = nova.scheduler.weights.all_weighers,
    opie.nova.weights.overcommit.OvercommitWeigher,
    opie.nova.weights.preemption_cost.PreemptionCostWeigher
[compute]
provider_config_location = {tmp}/provider_config
[opie]
"""
SHELVE = """
termination_mode = shelve
auth_type = password
"""
BOTH = audit_conf.SCHEDULER, audit_conf.COMPUTE


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


class Host:
    """A scheduler and compute host in a temporary directory."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.conf_path = tmp_path / 'nova.conf'
        self.write_conf('')
        conf = nova_conf.load([str(self.conf_path)])
        total = res.Resources(8, 16384, 100)
        text = provider_config.dump(
            provider_config.build(total, nova_conf.allocation_ratios(conf),
                                  nova_conf.reserved(conf)),
            total, nova_conf.allocation_ratios(conf),
            nova_conf.reserved(conf))
        self.provider_yaml = tmp_path / 'provider_config' / 'opie.yaml'
        self.provider_yaml.parent.mkdir()
        self.provider_yaml.write_text(text)
        self.beat(conf)

    def write_conf(self, extra, drop=None):
        good = GOOD.format(tmp=self.tmp)
        if drop is not None:
            good = good.replace(drop + '\n', '')
        self.conf_path.write_text(good + extra)

    def beat(self, conf):
        heartbeat.beat(conf.opie.heartbeat_path, 'sched-1',
                       conf.opie.heartbeat_interval,
                       opie_conf.load_settings(conf))

    def restart_scheduler(self):
        """Beat as a scheduler started with the current nova.conf would
        (one with a bad [opie] group does not start)."""
        conf = nova_conf.load([str(self.conf_path)], check_opie=False)
        try:
            self.beat(conf)
        except opie_conf.ConfigError:
            pass

    def check(self, roles=BOTH, now=None):
        conf = nova_conf.load([str(self.conf_path)], check_opie=False)
        return audit_conf.check(conf, roles, now or _now())


@pytest.fixture
def host(tmp_path, installed_nova):
    return Host(tmp_path)


def test_a_correct_host_has_no_problem(host):
    print(host.conf_path.read_text())
    print(host.provider_yaml.read_text())

    assert host.check() == []


def test_shelve_mode_done_right_has_no_problem(host):
    host.write_conf(SHELVE)
    host.restart_scheduler()

    assert host.check() == []


@pytest.mark.parametrize('extra, subject, message', [
    ('[filter_scheduler]\nenabled_filters = ComputeFilter\n',
     'nova.conf [filter_scheduler] enabled_filters',
     'PreemptibleFilter is not enabled'),
    ('[filter_scheduler]\nweight_classes = '
     'opie.nova.weights.overcommit.OvercommitWeigher\n',
     'nova.conf [filter_scheduler] weight_classes',
     'opie.nova.weights.preemption_cost.PreemptionCostWeigher missing'),
    ('overcommit_weight_multiplier = 0\n',
     'nova.conf [opie] overcommit_weight_multiplier',
     'is 0, so a host that needs preemption can win'),
    ('[filter_scheduler]\nhost_subset_size = 3\n',
     'nova.conf [filter_scheduler] host_subset_size',
     'Nova picks at random among the 3 best hosts'),
    ('costs = period,bogus=2\n', 'nova.conf [opie]',
     "[opie] costs = period,bogus=2: unknown cost plugin 'bogus'"),
    ('termination_mode = shelve\n', 'nova.conf [opie] auth_type',
     'termination_mode = shelve needs service user credentials'),
    (SHELVE + '[DEFAULT]\nshelved_offload_time = -1\n',
     'nova.conf [DEFAULT] shelved_offload_time',
     'is -1 while [opie] termination_mode = shelve: a shelved victim keeps '
     'its room on the host forever'),
    ('[DEFAULT]\nreserved_host_memory_mb = 2048\n',
     'provider config {tmp}/provider_config',
     'CUSTOM_PREEMPTIBLE_MEMORY_MB has reserved 512 but nova.conf gives the '
     'standard class 2048'),
    ('[DEFAULT]\ncpu_allocation_ratio = 16\n',
     'provider config {tmp}/provider_config',
     'CUSTOM_PREEMPTIBLE_VCPU has allocation_ratio 4.0 but nova.conf gives '
     'the standard class 16.0'),
    ('[compute]\nprovider_config_location = /nonexistent\n',
     'provider config /nonexistent',
     'gives no inventory of CUSTOM_PREEMPTIBLE_VCPU, '
     'CUSTOM_PREEMPTIBLE_MEMORY_MB, CUSTOM_PREEMPTIBLE_DISK_GB, '
     'CUSTOM_OPIE_HOST'),
    ('[compute]\ncpu_shared_set = 0-3,^2\ncpu_dedicated_set = 4-7\n',
     'provider config {tmp}/provider_config',
     'CUSTOM_PREEMPTIBLE_VCPU has total 8 but nova.conf gives the standard '
     'class 3'),
    ('[compute]\ncpu_dedicated_set = 0-7\n',
     'provider config {tmp}/provider_config',
     'gives CUSTOM_PREEMPTIBLE_VCPU but every CPU is in [compute] '
     'cpu_dedicated_set'),
    ('[compute]\ncpu_shared_set = 0-4\ncpu_dedicated_set = 4-7\n',
     'nova.conf [compute] CPU sets',
     'cpu_shared_set and cpu_dedicated_set must be disjoint, both name '
     'CPUs 4'),
    ('[scheduler]\nmax_placement_results = 50\n',
     'nova.conf [scheduler] max_placement_results',
     'is 50 while [placement] randomize_allocation_candidates is not true: '
     'Placement returns the same first 50 hosts to every request'),
    ('preempt_on_move = evacuate,live-migrate\n', 'nova.conf [opie]',
     'live-migrate cannot preempt'),
])
def test_each_broken_setting_is_named(host, extra, subject, message):
    host.write_conf(extra)
    host.restart_scheduler()

    found = host.check()

    print('\n'.join(map(str, found)))
    assert [(p.subject, message in p.message) for p in found] == [
        (subject.format(tmp=host.tmp), True)]


@pytest.mark.parametrize('line, message', [
    ('overcommit_weight_multiplier = -1000',
     '[opie] overcommit_weight_multiplier is not valid: Should be greater '
     'than or equal to 0 (allowed: a finite number >= 0)'),
    ('preemption_cost_weight_multiplier = nan',
     '[opie] preemption_cost_weight_multiplier is not valid: nan is not a '
     'finite number (allowed: a finite number >= 0)'),
    ('reconcile_interval = -5',
     '[opie] reconcile_interval is not valid: Should be greater than or '
     'equal to 0 (allowed: an integer >= 0 and <= 31536000)'),
    ('heartbeat_interval = 0',
     '[opie] heartbeat_interval is not valid: Should be greater than or '
     'equal to 1 (allowed: an integer >= 1 and <= 31536000)'),
    ('termination_mode = kill',
     "[opie] termination_mode is not valid: Valid values are [delete, "
     "shelve], but found 'kill' (allowed: one of delete, shelve)"),
    ('costs = period=0', "[opie] costs = period=0: cost plugin 'period': "
     "multiplier must be a finite number > 0, got '0'"),
    ('costs = period,period', "[opie] costs = period,period: cost plugin "
     "'period' is named twice (each may be named once, with one "
     "multiplier)"),
])
def test_an_invalid_opie_value_is_one_problem(host, line, message):
    host.write_conf(line + '\n')

    found = host.check()

    assert [(p.subject, p.message) for p in found] == [
        ('nova.conf [opie]', message)]
    assert found[0].fix == 'correct the value, then restart opie-scheduler'


def test_the_command_reports_an_invalid_opie_value(host, capsys):
    host.write_conf('reconcile_interval = -5\n')

    rc = manage.main(['audit', '--config-file', str(host.conf_path)])

    out = capsys.readouterr().out
    assert rc == 1
    assert out.startswith('PROBLEM nova.conf [opie]: [opie] '
                          'reconcile_interval is not valid: ')


def test_randomised_candidates_lift_the_limit_warning(host, tmp_path):
    host.write_conf('[scheduler]\nmax_placement_results = 50\n')
    placement_conf = tmp_path / 'placement.conf'
    placement_conf.write_text(
        '[placement]\nrandomize_allocation_candidates = true\n')

    conf = nova_conf.load([str(host.conf_path), str(placement_conf)])

    assert audit_conf.check(conf, BOTH, _now()) == []


def test_placements_candidate_cap_is_named(host, tmp_path):
    placement_conf = tmp_path / 'placement.conf'
    placement_conf.write_text(
        '[placement]\nmax_allocation_candidates = 100\n')

    conf = nova_conf.load([str(host.conf_path), str(placement_conf)])

    found = audit_conf.check(conf, BOTH, _now())
    assert [p.subject for p in found] == [
        'placement.conf [placement] max_allocation_candidates']
    assert found[0].message.startswith('is 100: Placement makes at most '
                                       '100 candidates for a request')


@pytest.mark.parametrize('token, message', [
    (None, 'gives no inventory of CUSTOM_OPIE_HOST (one unit, the host '
     'token), so opie-scheduler places no server on this compute'),
    ({'total': 2, 'max_unit': 2}, 'gives a wrong inventory of '
     'CUSTOM_OPIE_HOST'),
])
def test_a_provider_config_without_the_host_token_is_named(host, token,
                                                           message):
    document = yaml.safe_load(host.provider_yaml.read_text())
    additional = document['providers'][0]['inventories']['additional']
    additional[:] = [e for e in additional if 'CUSTOM_OPIE_HOST' not in e]
    if token is not None:
        additional.append({'CUSTOM_OPIE_HOST': token})
    host.provider_yaml.write_text(yaml.safe_dump(document))

    [problem] = host.check()

    assert problem.subject == 'provider config %s/provider_config' % host.tmp
    assert problem.message.startswith(message)


def test_a_filter_that_is_not_loaded_is_named(host):
    host.write_conf('', drop='available_filters = '
                    'opie.nova.filters.PreemptibleFilter')

    [problem] = host.check()

    assert problem.subject == 'nova.conf [filter_scheduler] available_filters'
    assert problem.message == (
        'opie.nova.filters.PreemptibleFilter is not loaded '
        '(available_filters: nova.scheduler.filters.all_filters)')
    assert problem.fix.startswith('add the line "available_filters = '
                                  'opie.nova.filters.PreemptibleFilter"')


def test_a_broken_provider_config_file_is_named(host):
    host.provider_yaml.write_text('providers: [\n')

    [problem, missing] = host.check()

    assert problem.subject == 'provider config %s' % host.provider_yaml
    assert 'cannot be read' in problem.message
    assert 'nova-compute will not start' in problem.message
    assert 'gives no inventory of' in missing.message


def test_no_heartbeat_means_the_stock_scheduler(host):
    os.unlink(host.tmp / 'opie-scheduler.heartbeat')

    [problem] = host.check()

    assert problem.subject == 'opie-scheduler on this host'
    assert ('no heartbeat in %s/opie-scheduler.heartbeat: the OPIE scheduler '
            'manager is not running' % host.tmp) in problem.message
    assert 'run opie-scheduler instead of nova-scheduler' in problem.fix


def test_a_stale_heartbeat_is_reported(host):
    later = _now() + datetime.timedelta(seconds=61)

    [problem] = host.check(now=later)

    assert 'is 61 s old (interval 30 s)' in problem.message


def test_a_scheduler_in_safe_mode_is_reported(host):
    conf = nova_conf.load([str(host.conf_path)])
    heartbeat.beat(conf.opie.heartbeat_path, 'sched-1',
                   conf.opie.heartbeat_interval,
                   opie_conf.load_settings(conf),
                   safe_mode='Nova 35.1.0 is not supported')

    [problem] = host.check()

    assert problem.message == (
        'opie-scheduler runs in SAFE MODE (Nova 35.1.0 is not supported): '
        'nothing is preempted')
    assert 'install the OPIE release made for the installed Nova' in \
        problem.fix


def test_a_heartbeat_under_two_intervals_old_is_fine(host):
    assert host.check(now=_now() + datetime.timedelta(seconds=55)) == []


def test_a_scheduler_not_restarted_after_a_change_is_reported(host):
    host.write_conf(SHELVE + 'costs = period=1,count=60\n')

    found = host.check()

    assert [p.message.split(' (')[0] for p in found] == [
        'runs with termination_mode = delete',
        'runs with costs = period=1']
    assert found[0].message.endswith('but nova.conf says shelve')
    assert found[0].fix == 'restart opie-scheduler to apply nova.conf'


def test_roles_select_the_checks(host):
    host.write_conf('[filter_scheduler]\nenabled_filters = ComputeFilter\n'
                    '[compute]\nprovider_config_location = /nonexistent\n')

    scheduler = host.check(roles=(audit_conf.SCHEDULER,))
    compute = host.check(roles=(audit_conf.COMPUTE,))

    assert [p.subject for p in scheduler] == [
        'nova.conf [filter_scheduler] enabled_filters']
    assert [p.subject for p in compute] == ['provider config /nonexistent']
    assert compute[0].fix == (
        'opie-manage provider-config --config-file %s --output '
        '/nonexistent/opie.yaml, then restart nova-compute' % host.conf_path)


def test_command_prints_problems_and_exits_1(host, capsys):
    host.write_conf('[filter_scheduler]\nhost_subset_size = 2\n')

    rc = manage.main(['audit', '--config-file', str(host.conf_path)])

    out, err = capsys.readouterr()
    print(out)
    assert rc == 1
    assert out.startswith('PROBLEM nova.conf [filter_scheduler] '
                          'host_subset_size: is 2')
    assert '\n    fix: set host_subset_size = 1' in out
    assert out.endswith('1 problem; checked %s (scheduler and compute)\n'
                        % host.conf_path)
    assert err == ''


def test_command_passes_a_correct_host(host, capsys):
    rc = manage.main(['audit', '--config-file', str(host.conf_path),
                      '--role', 'compute'])

    out, _ = capsys.readouterr()
    assert rc == 0
    assert out == 'OK, no problem; checked %s (compute)\n' % host.conf_path


@pytest.mark.parametrize('args, message', [
    ([], 'nothing to audit: give --config-file, --cloud or --os-cloud'),
    (['--config-file', '/nonexistent.conf'],
     'Failed to find some config files: /nonexistent.conf'),
])
def test_bad_input_exits_2(capsys, args, message):
    rc = manage.main(['audit'] + args)

    err = capsys.readouterr().err
    assert rc == 2
    assert err == 'opie-manage audit: error: %s\n' % message


@pytest.mark.parametrize('extra, subject, message, fix', [
    ('max_victim = 3\n', 'nova.conf [opie] max_victim',
     'is not an option of [opie]: OPIE ignores it', 'max_victims'),
    ('pasword = x\n', 'nova.conf [opie] pasword',
     'is not an option of [opie]: OPIE ignores it', 'password'),
    ('password = pa$word1\n', 'nova.conf [opie] password',
     'has an unescaped "$"', 'write each "$" of the value as "$$"'),
    ('preempted_tag = a$$b\nusername = pa$word1\n',
     'nova.conf [opie] username', 'reads "$word1" as a reference to option '
     'word1', 'write each "$" of the value as "$$"'),
])
def test_misspelled_options_and_unescaped_dollars_are_named(
        host, extra, subject, message, fix):
    host.write_conf(extra)

    found = host.check()

    assert [(p.subject, message in p.message, fix in p.fix)
            for p in found] == [(subject, True, True)]


def test_escaped_dollars_and_interpolation_pass(host):
    host.write_conf('password = pa$$word1\n'
                    'heartbeat_path = $state_path/opie-scheduler.heartbeat\n')

    assert host.check() == []


def test_shelve_mode_may_use_novas_service_user(host):
    host.write_conf('termination_mode = shelve\n[service_user]\n'
                    'auth_type = password\n')
    host.restart_scheduler()

    assert host.check() == []


def test_json_format_and_config_dir(host, capsys, tmp_path):
    conf_d = tmp_path / 'nova.conf.d'
    conf_d.mkdir()
    (conf_d / '50-site.conf').write_text(
        '[filter_scheduler]\nhost_subset_size = 2\n')

    rc = manage.main(['audit', '--config-file', str(host.conf_path),
                      '--config-dir', str(conf_d), '--format', 'json'])

    out = json.loads(capsys.readouterr().out)
    assert rc == 1
    assert out['problems'] == [{
        'subject': 'nova.conf [filter_scheduler] host_subset_size',
        'message': mock.ANY, 'fix': mock.ANY}]
    assert out['checked'] == ['%s, %s (scheduler and compute)' % (
        host.conf_path, conf_d / '50-site.conf')]


@pytest.mark.parametrize('content, message', [
    (b'[DEFAULT]\n# caf\xe9\n', 'not UTF-8 text'),
    (None, 'not a regular file'),
])
def test_unreadable_config_files_exit_2(tmp_path, capsys, content, message):
    path = tmp_path / 'nova.conf'
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)

    rc = manage.main(['audit', '--config-file', str(path)])

    err = capsys.readouterr().err
    assert rc == 2
    assert err == 'opie-manage audit: error: %s: %s' % (path, message) \
        + err.partition(message)[2]
    assert len(err.splitlines()) == 1


def test_the_options_of_another_auth_plugin_are_known(host):
    host.write_conf('auth_type = v3applicationcredential\n'
                    'application_credential_id = abc\n'
                    'application_credential_secret = s$$cret\n')

    assert host.check() == []


@pytest.mark.parametrize('installed, message', [
    ('35.0.0', 'Nova 35.0.0 is not supported: this OPIE runs on Nova 34.x '
     '(2026.2)'),
    (None, 'Nova is not installed in this Python environment'),
])
def test_a_nova_this_opie_was_not_built_for_is_named(host, installed_nova,
                                                     installed, message):
    installed_nova(installed)

    found = host.check(roles=(audit_conf.SCHEDULER,))

    assert [(p.subject, p.message) for p in found] == [('Nova', message)]


def test_a_compute_of_dedicated_cpus_needs_no_preemptible_vcpu(host):
    """Nova reports no VCPU there, so provider-config writes none."""
    host.write_conf('[compute]\ncpu_dedicated_set = 0-7\n')
    conf = nova_conf.load([str(host.conf_path)])
    total = res.Resources(0, 16384, 100)
    ratios, reserved = (nova_conf.allocation_ratios(conf),
                        nova_conf.reserved(conf))
    host.provider_yaml.write_text(provider_config.dump(
        provider_config.build(total, ratios, reserved), total, ratios,
        reserved))

    assert host.check() == []
