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

"""``opie-bot`` cloud commands: one line and a non-zero exit on errors."""
import os
import socket

import yaml

from opie.bot import cli
from opie.bot.cli import common
from tests.unit.bot import tenant


# A job whose inputs exist (those of the examples are not shipped):
# these tests are about the cloud.
JOB = """\
job: {name: tiny, deadline_s: 3600}
""" + tenant.SMALL_FLAVOR + """\
tasks:
  - {id: t1, command: "true", runtime_s: 600}
"""


def job_file(tmp_path):
    path = tmp_path / 'tiny.yaml'
    path.write_text(JOB)
    return str(path)


def closed_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def test_unreachable_endpoint_is_one_line_exit_3(tmp_path, monkeypatch,
                                                 capsys):
    clouds = tmp_path / 'clouds.yaml'
    clouds.write_text(yaml.safe_dump({'clouds': {'x': {
        'auth_type': 'admin_token',
        'auth': {'endpoint': 'http://127.0.0.1:%d/v2.1' % closed_port(),
                 'token': 'tok-55'}}}}))
    monkeypatch.setenv('OS_CLIENT_CONFIG_FILE', str(clouds))

    code = cli.main(['run', job_file(tmp_path), '--backend',
                     'openstack', '--os-cloud', 'x', '--store',
                     'file://%s' % (tmp_path / 'store'), '--data-dir',
                     str(tmp_path / 'data')])

    err = capsys.readouterr().err.strip().splitlines()
    assert code == common.EXIT_CLOUD
    assert len(err) == 1 and 'cannot reach the cloud' in err[0]
    assert 'tok-55' not in err[0]
    assert list((tmp_path / 'data' / 'jobs').iterdir()) == []


def test_no_credentials_at_all(tmp_path, monkeypatch, capsys):
    for name in [n for n in os.environ
                 if n.startswith('OS_')]:
        monkeypatch.delenv(name)

    code = cli.main(['run', job_file(tmp_path), '--backend',
                     'openstack', '--data-dir', str(tmp_path)])

    assert code == common.EXIT_CLOUD
    assert '--os-cloud' in capsys.readouterr().err


def test_status_of_an_unknown_job(tmp_path, capsys):
    code = cli.main(['status', 'nope-000001', '--data-dir', str(tmp_path)])

    assert code == common.EXIT_INPUT
    assert 'no journal' in capsys.readouterr().err


def test_plan_on_a_cloud_shows_and_uses_the_published_rates(
        tmp_path, monkeypatch, capsys):
    from tests.unit.bot import fake_nova
    fake_nova.install(monkeypatch, ['small'])
    monkeypatch.setattr(fake_nova.Flavor, 'get_keys', lambda flavor: dict(
        {'opie:preemptible': 'true',
         'opie:interruptions_per_server_day_1d': '2',
         'opie:interruptions_per_server_day_7d': '0.5'}
        if fake_nova.name_is_preemptible(flavor.name) else {}))

    code = cli.main(['plan', job_file(tmp_path), '--backend', 'openstack',
                     '-f', 'json'])

    assert code == 0
    shown = __import__('json').loads(capsys.readouterr().out)
    [server] = shown['servers']
    assert server['market'] == 'preemptible'
    # The week's rate, over the server-days the plan keeps it.
    assert shown['interruption_rates'] == {'small': {
        '1d': 2.0, '7d': 0.5,
        'expected_preemptions': 0.5 * server['finish_s'] / 86400}}

    assert cli.main(['plan', job_file(tmp_path), '--backend',
                     'openstack']) == 0
    out = capsys.readouterr().out
    assert ('rates: small-preemptible 2/server-day over the last day, 0.5 '
            'over the last week: %.2f expected preemptions' % (
                0.5 * server['finish_s'] / 86400)) in out


def test_plan_on_a_cloud_without_published_rates(tmp_path, monkeypatch,
                                                 capsys):
    from tests.unit.bot import fake_nova
    fake_nova.install(monkeypatch, ['small'])
    assert cli.main(['plan', job_file(tmp_path), '--backend',
                     'openstack']) == 0
    assert ('rates: small-preemptible unknown/server-day over the last '
            'day, unknown over the last week: expected preemptions '
            'unknown') in capsys.readouterr().out


def test_plan_os_cloud_needs_the_openstack_backend(tmp_path, capsys):
    assert cli.main(['plan', job_file(tmp_path), '--os-cloud',
                     'x']) == common.EXIT_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and '--backend openstack' in err[0], err
