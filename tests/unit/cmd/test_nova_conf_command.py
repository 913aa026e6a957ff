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

"""``opie-manage nova-conf``: OPIE's settings written into a nova.conf."""
import datetime
import os
import subprocess
import sys
import textwrap

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
import pytest

from opie.cmd import audit_conf
from opie.cmd import manage
from opie.cmd import nova_conf
from opie.nova import conf as opie_conf

OPIE_FLAGS = ['--costs', 'period=1,count=60', '--billing-period', '600',
              '--max-victims', '3', '--minimum-uptime', '600',
              '--termination-mode', 'delete']
SERVICE_USER = ['--auth-url', 'http://keystone/identity', '--username',
                'nova', '--password-file', '-', '--project-name', 'service']
NOVA_DEFAULT_FILTERS = ('ComputeFilter,ComputeCapabilitiesFilter,'
                        'ImagePropertiesFilter,ServerGroupAntiAffinityFilter,'
                        'ServerGroupAffinityFilter')
# An operator's nova.conf: comments, other sections, their own filters
# and weighers, a filter list continued on a second line.
OPERATOR_CONF = textwrap.dedent("""\
    # Managed by hand.
    [DEFAULT]
    debug = True

    [filter_scheduler]
    # Ours first.
    available_filters = my.filters.all
    # Then Nova's.
    available_filters = nova.scheduler.filters.all_filters
    enabled_filters = ComputeFilter,
        MyFilter
    weight_classes = my.weights.Heavy
    host_subset_size = 1

    [opie]
    # Tuned.
    reconcile_interval = 30

    [api]
    auth_strategy = keystone
    """)


@pytest.fixture(autouse=True)
def password_on_stdin(monkeypatch):
    """What ``--password-file -`` reads, every time."""
    monkeypatch.setattr('sys.stdin.readline', lambda: 'secret\n')


@pytest.fixture
def conf_path(tmp_path):
    return tmp_path / 'nova.conf'


def _run(capsys, *args):
    rc = manage.main(['nova-conf'] + [str(arg) for arg in args])
    out, err = capsys.readouterr()
    return rc, out, err


def _scheduler(capsys, path, *flags):
    return _run(capsys, 'scheduler', '--config-file', path, *flags)


def _audit(path, role):
    return audit_conf.check(nova_conf.load([str(path)]), (role,),
                            datetime.datetime.now(datetime.timezone.utc))


@pytest.mark.usefixtures('installed_nova')
def test_scheduler_on_a_fresh_file(capsys, conf_path):
    rc, out, _ = _scheduler(capsys, conf_path, *OPIE_FLAGS)

    text = conf_path.read_text()
    print(text)
    assert rc == 0
    assert out.startswith('%s: set [filter_scheduler] available_filters, '
                          % conf_path)
    assert text == textwrap.dedent("""\
        [filter_scheduler]
        available_filters = nova.scheduler.filters.all_filters
        available_filters = opie.nova.filters.PreemptibleFilter
        enabled_filters = %s,PreemptibleFilter
        weight_classes = nova.scheduler.weights.all_weighers,\
opie.nova.weights.overcommit.OvercommitWeigher,\
opie.nova.weights.preemption_cost.PreemptionCostWeigher

        [opie]
        costs = period=1,count=60
        billing_period = 600
        max_victims = 3
        minimum_uptime = 600
        termination_mode = delete
        """ % NOVA_DEFAULT_FILTERS)
    settings = opie_conf.load_settings(nova_conf.load([str(conf_path)]))
    assert (str(settings.cost_model), settings.max_victims) == (
        str(opie_conf.costs.load_cost_model('period=1,count=60', 600)), 3)
    # Only the heartbeat of a running opie-scheduler is missing.
    [problem] = _audit(conf_path, audit_conf.SCHEDULER)
    assert problem.message.startswith('no heartbeat in ')


def test_scheduler_keeps_every_other_line_of_an_operators_file(capsys,
                                                               conf_path):
    conf_path.write_text(OPERATOR_CONF)

    rc, _, _ = _scheduler(capsys, conf_path, '--termination-mode', 'delete')

    assert rc == 0
    assert conf_path.read_text() == OPERATOR_CONF.replace(
        'available_filters = nova.scheduler.filters.all_filters\n',
        'available_filters = nova.scheduler.filters.all_filters\n'
        'available_filters = opie.nova.filters.PreemptibleFilter\n').replace(
        'enabled_filters = ComputeFilter,\n    MyFilter\n',
        'enabled_filters = ComputeFilter,MyFilter,PreemptibleFilter\n'
    ).replace(
        'weight_classes = my.weights.Heavy\n',
        'weight_classes = my.weights.Heavy,'
        'opie.nova.weights.overcommit.OvercommitWeigher,'
        'opie.nova.weights.preemption_cost.PreemptionCostWeigher\n').replace(
        'reconcile_interval = 30\n',
        'reconcile_interval = 30\ntermination_mode = delete\n')


def test_scheduler_twice_is_scheduler_once(capsys, conf_path):
    conf_path.write_text(OPERATOR_CONF)
    _scheduler(capsys, conf_path, *OPIE_FLAGS)
    once = conf_path.read_text()
    mtime = conf_path.stat().st_mtime_ns

    rc, out, _ = _scheduler(capsys, conf_path, *OPIE_FLAGS)

    assert rc == 0
    assert out == '%s: nothing to change\n' % conf_path
    assert conf_path.read_text() == once
    # Not even rewritten.
    assert conf_path.stat().st_mtime_ns == mtime


def test_classes_already_there_are_not_added_again(capsys, conf_path):
    text = ('[filter_scheduler]\n'
            'available_filters = opie.nova.filters.PreemptibleFilter\n'
            'enabled_filters = PreemptibleFilter, ComputeFilter\n'
            'weight_classes = opie.nova.weights.overcommit.OvercommitWeigher'
            '\n')
    conf_path.write_text(text)

    _scheduler(capsys, conf_path)

    # Only the missing weigher; the filter lists are left as written.
    assert conf_path.read_text() == text.replace(
        'OvercommitWeigher\n', 'OvercommitWeigher,'
        'opie.nova.weights.preemption_cost.PreemptionCostWeigher\n')
    assert '[opie]' not in conf_path.read_text()


def test_shelve_mode_writes_the_service_user(capsys, conf_path):
    rc, _, _ = _scheduler(capsys, conf_path, '--termination-mode', 'shelve',
                          *SERVICE_USER)

    assert rc == 0
    conf = nova_conf.load([str(conf_path)])
    assert opie_conf.load_settings(conf).termination_mode == 'shelve'
    # keystoneauth loads the service user from what was written (on a
    # ConfigOpts of its own: loading registers the plugin's options).
    auth_conf = cfg.ConfigOpts()
    ks_loading.register_auth_conf_options(auth_conf, 'opie')
    auth_conf(['--config-file', str(conf_path)], default_config_files=[],
              default_config_dirs=[], use_env=False)
    auth = ks_loading.load_auth_from_conf_options(auth_conf, 'opie')
    assert {key: value for key, value in auth.get_cache_id_elements().items()
            if value is not None} == {
        'auth_url': 'http://keystone/identity', 'username': 'nova',
        'password': 'secret', 'project_name': 'service',
        'user_domain_name': 'Default', 'project_domain_name': 'Default'}
    assert conf_path.read_text().endswith(textwrap.dedent("""\
        [opie]
        termination_mode = shelve
        auth_type = password
        auth_url = http://keystone/identity
        username = nova
        password = secret
        project_name = service
        user_domain_name = Default
        project_domain_name = Default
        """))

    _scheduler(capsys, conf_path, '--termination-mode', 'shelve',
               *SERVICE_USER, '--domain-name', 'services')

    assert conf_path.read_text().endswith(
        'user_domain_name = services\nproject_domain_name = services\n')


@pytest.mark.parametrize('flags, message', [
    (['--costs', 'bogus'], "--costs bogus: unknown cost plugin 'bogus' "
     '(available: age, count, leftover, period)'),
    (['--costs', 'period=x'], '--costs period=x: '),
    (['--billing-period', '0'],
     '--billing-period 0: Should be greater than or equal to 1'),
    (['--billing-period', 'hourly'], '--billing-period hourly: invalid '
     "literal for int() with base 10: 'hourly'"),
    (['--max-victims', '-1'],
     '--max-victims -1: Should be greater than or equal to 0'),
    (['--minimum-uptime', '-1'],
     '--minimum-uptime -1: Should be greater than or equal to 0'),
    (['--minimum-uptime', '31536001'],
     '--minimum-uptime 31536001: Should be less than or equal to '),
    (['--termination-mode', 'kill'], '--termination-mode kill: Valid values '
     "are [delete, shelve], but found 'kill'"),
    (['--termination-mode', 'shelve'], '--termination-mode shelve needs the '
     'service user that snapshots victims to Glance: set [service_user] in '
     'nova.conf or give --auth-url, '
     '--username, --password-file, --project-name'),
    (['--termination-mode', 'shelve'] + SERVICE_USER[:-2]
     + ['--project-name', ''], '--termination-mode shelve needs the service '
     'user that snapshots victims to Glance: set [service_user] in nova.conf '
     'or give --project-name'),
    (SERVICE_USER, '--auth-url, --username, --password-file, --project-name '
     'and --domain-name go with --termination-mode shelve'),
    (['--termination-mode', 'shelve', '--password-file', '/nonexistent']
     + SERVICE_USER[:4] + SERVICE_USER[6:],
     '--password-file /nonexistent: No such file or directory'),
    (['--termination-mode', 'shelve', '--password-file', '/dev/null']
     + SERVICE_USER[:4] + SERVICE_USER[6:],
     '--password-file /dev/null: no password on its first line'),
])
def test_bad_values_exit_2_and_leave_the_file_alone(capsys, conf_path,
                                                    flags, message):
    conf_path.write_text(OPERATOR_CONF)

    rc, out, err = _scheduler(capsys, conf_path, '--max-victims', '2',
                              *flags)

    assert rc == 2
    assert out == ''
    [line] = err.splitlines()
    assert line.startswith('opie-manage nova-conf: error: ')
    assert message in line
    assert conf_path.read_text() == OPERATOR_CONF


def test_a_file_nova_cannot_read_is_left_alone(capsys, conf_path):
    text = '[filter_scheduler]\nenabled_filters\n'
    conf_path.write_text(text)

    rc, _, err = _scheduler(capsys, conf_path, '--max-victims', '2')

    assert rc == 2
    assert err == ("opie-manage nova-conf: error: %s: line 2: no '=' or ':' "
                   "in 'enabled_filters'\n" % conf_path)
    assert conf_path.read_text() == text


def test_an_unreadable_file_is_named(capsys, tmp_path):
    rc, _, err = _scheduler(capsys, tmp_path)

    assert rc == 2
    assert err == ('opie-manage nova-conf: error: %s: not a regular file\n'
                   % tmp_path)


def test_the_file_keeps_its_mode(capsys, conf_path):
    conf_path.write_text('[DEFAULT]\n')
    conf_path.chmod(0o640)

    _scheduler(capsys, conf_path, '--max-victims', '2')

    assert conf_path.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in conf_path.parent.iterdir()] == ['nova.conf']


@pytest.mark.parametrize('mode, expected', [
    ([], '[compute]\nprovider_config_location = {dir}\n'),
    (['--termination-mode', 'delete'],
     '[compute]\nprovider_config_location = {dir}\n'),
    (['--termination-mode', 'shelve'],
     '[DEFAULT]\nstate_path = /var/lib/nova\nshelved_offload_time = 0\n\n'
     '[compute]\nprovider_config_location = {dir}\n'),
])
def test_compute(capsys, tmp_path, mode, expected):
    conf_path = tmp_path / 'nova-cpu.conf'
    conf_path.write_text('[DEFAULT]\nstate_path = /var/lib/nova\n')
    directory = tmp_path / 'provider_config'
    args = ['compute', '--config-file', conf_path,
            '--provider-config-dir', directory] + mode

    rc, _, _ = _run(capsys, *args)
    text = conf_path.read_text()
    again = _run(capsys, *args)

    assert rc == 0
    if '[DEFAULT]' not in expected:
        expected = '[DEFAULT]\nstate_path = /var/lib/nova\n\n' + expected
    assert text == expected.format(dir=directory)
    assert again == (0, '%s: nothing to change\n' % conf_path, '')
    assert conf_path.read_text() == text
    conf = nova_conf.load([str(conf_path)])
    assert conf.compute.provider_config_location == str(directory)


def test_compute_checks_the_termination_mode(capsys, conf_path):
    rc, _, err = _run(capsys, 'compute', '--config-file', conf_path,
                      '--provider-config-dir', '/etc/nova/provider_config',
                      '--termination-mode', 'shelf')

    assert rc == 2
    assert err == ("opie-manage nova-conf: error: --termination-mode shelf: "
                   "Valid values are [delete, shelve], but found 'shelf'\n")
    assert not conf_path.exists()


def test_writing_nova_conf_loads_neither_nova_nor_cloud_clients(tmp_path):
    code = textwrap.dedent("""\
        import sys
        from opie.cmd import manage
        manage.main(['nova-conf', 'scheduler', '--config-file', sys.argv[1],
                     '--costs', 'period'])
        print(sorted({m.partition('.')[0] for m in sys.modules}
                     & {'nova', 'novaclient', 'openstack'}))
        """)

    out = subprocess.run([sys.executable, '-c', code,
                          str(tmp_path / 'nova.conf')],
                         check=True, capture_output=True, text=True).stdout

    assert out.splitlines()[-1] == '[]'


def test_a_password_is_never_an_argument(capsys, conf_path, tmp_path):
    with pytest.raises(SystemExit):
        _scheduler(capsys, conf_path, '--termination-mode', 'shelve',
                   '--password', 'secret')
    password_file = tmp_path / 'password'
    password_file.write_text('pa$word1\n')
    flags = SERVICE_USER[:4] + ['--password-file', password_file]
    flags += SERVICE_USER[6:]

    rc, _, _ = _scheduler(capsys, conf_path, '--termination-mode', 'shelve',
                          *flags)

    assert rc == 0
    # Created private; the $ escaped from oslo.config's interpolation.
    assert conf_path.stat().st_mode & 0o777 == 0o600
    assert 'password = pa$$word1\n' in conf_path.read_text()
    assert _audit(conf_path, audit_conf.SCHEDULER)[0].message.startswith(
        'no heartbeat')
    auth_conf = cfg.ConfigOpts()
    ks_loading.register_auth_conf_options(auth_conf, 'opie')
    auth_conf(['--config-file', str(conf_path)], default_config_files=[],
              default_config_dirs=[], use_env=False)
    auth = ks_loading.load_auth_from_conf_options(auth_conf, 'opie')
    assert auth.get_cache_id_elements()['password'] == 'pa$word1'


def test_shelve_mode_uses_novas_service_user_when_set(capsys, conf_path):
    text = '[service_user]\nsend_service_user_token = true\n' \
        'auth_type = password\n'
    conf_path.write_text(text)

    rc, _, _ = _scheduler(capsys, conf_path, '--termination-mode', 'shelve')

    assert rc == 0
    assert conf_path.read_text().endswith(
        '[opie]\ntermination_mode = shelve\n')
    assert 'auth_type' not in conf_path.read_text().partition('[opie]')[2]


def test_a_fifo_is_refused_and_kept(capsys, tmp_path):
    fifo = tmp_path / 'nova.conf'
    os.mkfifo(fifo)

    rc, _, err = _scheduler(capsys, fifo, '--max-victims', '2')

    assert rc == 2
    assert err == ('opie-manage nova-conf: error: %s: not a regular file\n'
                   % fifo)
    assert fifo.is_fifo()


def test_a_crlf_file_stays_crlf(capsys, conf_path):
    text = '[DEFAULT]\r\ndebug = True\r\n\r\n[opie]\r\ncosts = age\r\n'
    conf_path.write_bytes(text.encode())

    _scheduler(capsys, conf_path, '--max-victims', '2')

    written = conf_path.read_bytes().decode()
    assert written.startswith(text[:-2])
    assert '\n' not in written.replace('\r\n', '')


ROUND_TRIP = textwrap.dedent("""\
    # Managed by hand.
    [DEFAULT]
    debug = True

    [filter_scheduler]
    available_filters = my.filters.all
    enabled_filters = ComputeFilter,MyFilter
    host_subset_size = 1

    [api]
    auth_strategy = keystone
    """)


@pytest.mark.parametrize('original', ['', '[DEFAULT]\ndebug = True\n',
                                      ROUND_TRIP,
                                      ROUND_TRIP.replace('\n', '\r\n')])
def test_remove_undoes_scheduler_byte_for_byte(capsys, conf_path,
                                               original):
    conf_path.write_bytes(original.encode())
    _scheduler(capsys, conf_path, *OPIE_FLAGS)
    assert conf_path.read_bytes() != original.encode()

    rc, out, _ = _scheduler(capsys, conf_path, '--remove')

    assert rc == 0
    assert out.startswith('%s: removed ' % conf_path)
    assert conf_path.read_bytes() == original.encode()
    assert _scheduler(capsys, conf_path, '--remove')[1] == (
        '%s: nothing to remove\n' % conf_path)


def test_remove_refuses_settings(capsys, conf_path):
    rc, _, err = _scheduler(capsys, conf_path, '--remove', '--costs', 'age')

    assert rc == 2
    assert '--remove takes no [opie] option' in err


@pytest.mark.parametrize('mode', [[], ['--termination-mode', 'shelve']])
@pytest.mark.parametrize('original', ['', '[DEFAULT]\ndebug = True\n',
                                      ROUND_TRIP,
                                      ROUND_TRIP.replace('\n', '\r\n')])
def test_compute_remove_undoes_compute_byte_for_byte(capsys, conf_path,
                                                     original, mode):
    conf_path.write_bytes(original.encode())
    args = ['compute', '--config-file', conf_path,
            '--provider-config-dir', '/etc/nova/provider_config'] + mode
    _run(capsys, *args)
    assert conf_path.read_bytes() != original.encode()

    rc, out, _ = _run(capsys, *args, '--remove')

    assert rc == 0
    assert out.startswith('%s: removed [' % conf_path)
    assert conf_path.read_bytes() == original.encode()
    assert _run(capsys, *args, '--remove')[1] == (
        '%s: nothing to remove\n' % conf_path)


def test_compute_remove_leaves_the_operators_values(capsys, conf_path):
    text = ('[DEFAULT]\nshelved_offload_time = 0\n\n'
            '[compute]\nprovider_config_location = /srv/mine\n')
    conf_path.write_text(text)

    rc, _, err = _run(capsys, 'compute', '--config-file', conf_path,
                      '--provider-config-dir', '/etc/nova/provider_config',
                      '--termination-mode', 'shelve', '--remove')

    assert rc == 2
    assert err == (
        'opie-manage nova-conf: error: %s: [compute] '
        'provider_config_location = /srv/mine is not what OPIE set '
        '(/etc/nova/provider_config); nothing removed\n' % conf_path)
    assert conf_path.read_text() == text


def test_config_dir_gets_a_file_of_its_own(capsys, tmp_path, conf_path):
    conf_path.write_text(ROUND_TRIP)
    conf_d = tmp_path / 'nova.conf.d'
    conf_d.mkdir()
    (conf_d / '10-site.conf').write_text(
        '[filter_scheduler]\nenabled_filters = ComputeFilter\n')
    ours = conf_d / '50-opie.conf'

    rc, out, _ = _scheduler(capsys, conf_path, '--config-dir', conf_d,
                            *OPIE_FLAGS)

    assert rc == 0
    assert out.startswith('%s: set ' % ours)
    assert conf_path.read_text() == ROUND_TRIP
    text = ours.read_text()
    # The filter list in force, from 10-site.conf, with OPIE's; one more
    # available_filters line, added to those of nova.conf.
    assert 'enabled_filters = ComputeFilter,PreemptibleFilter\n' in text
    assert 'available_filters = opie.nova.filters.PreemptibleFilter\n' in text
    assert 'my.filters.all' not in text
    conf = nova_conf.load([str(conf_path)], str(conf_d))
    assert conf.filter_scheduler.available_filters == [
        'my.filters.all', nova_conf.FILTER_PATH]
    assert _scheduler(capsys, conf_path, '--config-dir', conf_d,
                      *OPIE_FLAGS)[1] == '%s: nothing to change\n' % ours

    (conf_d / '90-late.conf').write_text('[opie]\nmax_victims = 9\n')
    rc, _, err = _scheduler(capsys, conf_path, '--config-dir', conf_d,
                            '--max-victims', '4')
    assert rc == 2
    assert ('%s sets [opie] max_victims after %s' % (
        conf_d / '90-late.conf', ours)) in err
    os.unlink(conf_d / '90-late.conf')

    rc, _, _ = _scheduler(capsys, conf_path, '--config-dir', conf_d,
                          '--remove')
    assert rc == 0
    assert not ours.exists()


@pytest.mark.parametrize('content, message', [
    (b'[DEFAULT]\ndebug = caf\xe9\n', 'not UTF-8 text'),
    (None, 'not a regular file'),
])
def test_unreadable_files_exit_2(capsys, conf_path, content, message):
    if content is None:
        conf_path.mkdir()
    else:
        conf_path.write_bytes(content)

    rc, _, err = _scheduler(capsys, conf_path, '--max-victims', '2')

    assert rc == 2
    [line] = err.splitlines()
    assert message in line and str(conf_path) in line


@pytest.mark.parametrize('mode, warned', [(0o644, True), (0o640, False)])
def test_a_password_readable_by_everyone_is_named(capsys, conf_path, mode,
                                                  warned):
    conf_path.write_text('[DEFAULT]\ndebug = True\n')
    conf_path.chmod(mode)

    rc, _, err = _scheduler(capsys, conf_path, '--termination-mode',
                            'shelve', *SERVICE_USER)

    assert rc == 0
    # Its mode is the operator's: Nova may read it as another user.
    assert conf_path.stat().st_mode & 0o777 == mode
    assert err == ('warning: %s holds [opie] password and every user can '
                   'read it: make it readable by Nova only (chmod o-r)\n'
                   % conf_path if warned else '')
