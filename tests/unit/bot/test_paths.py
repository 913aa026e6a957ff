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

"""Paths and options a tenant gives (issue 25, point 5): every problem is
one line and exit status 2 before any work starts, and nothing is written
through a symbolic link."""
import os

import pytest

from opie.bot import cli
from opie.bot.cli import common
from tests.unit.bot import fake_nova
from tests.unit.bot import helpers

J60 = str(helpers.JOBS / 'j60.yaml')


def one_line(capsys):
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    # Before any work: no progress line, no summary.
    assert out == ''
    return lines[0]


@pytest.mark.parametrize('suffix', ['.json', '.html'])
def test_a_report_is_never_written_through_a_link(tmp_path, capsys,
                                                  suffix):
    target = tmp_path / 'precious'
    target.write_text('keep me')
    reports = tmp_path / 'reports'
    reports.mkdir()
    os.symlink(target, reports / ('j60-run-seed0' + suffix))

    code = cli.main(['run', J60, '--report-dir', str(reports)])

    assert code == common.EXIT_INPUT
    line = one_line(capsys)
    assert 'symbolic link' in line and 'j60-run-seed0' + suffix in line
    assert target.read_text() == 'keep me'


def test_a_report_that_is_a_directory_is_refused(tmp_path, capsys):
    (tmp_path / 'j60-run-seed0.json').mkdir()

    assert cli.main(['run', J60, '--report-dir', str(tmp_path)]) == 2
    assert 'j60-run-seed0.json' in one_line(capsys)


@pytest.mark.parametrize('option', ['--data-dir', '--report-dir'])
def test_a_directory_option_naming_a_file(tmp_path, capsys, option):
    a_file = tmp_path / 'file'
    a_file.write_text('')
    for path in (a_file, a_file / 'below'):
        code = cli.main(['run', J60, option, str(path)])

        assert code == common.EXIT_INPUT
        line = one_line(capsys)
        assert option in line and str(path) in line
        assert 'Traceback' not in line


@pytest.mark.parametrize('command', [['status', 'x-abcdef'], ['list'],
                                     ['resume', 'x-abcdef'],
                                     ['cancel', 'x-abcdef']])
def test_a_data_dir_naming_a_file_for_journal_commands(tmp_path, capsys,
                                                       command):
    a_file = tmp_path / 'file'
    a_file.write_text('')

    assert cli.main(command + ['--data-dir', str(a_file)]) == 2
    assert '--data-dir' in one_line(capsys)


@pytest.mark.parametrize('store', ['file://relative/x', 'file:relative',
                                   'file://', 'ftp:///x'])
def test_a_store_that_is_no_absolute_path(tmp_path, monkeypatch, capsys,
                                          store):
    nova = fake_nova.install(monkeypatch, ['c4.large'])

    code = cli.main(['run', J60, '--backend', 'openstack', '--store', store,
                     '--data-dir', str(tmp_path)])

    assert code == common.EXIT_INPUT
    assert 'file:///ABSOLUTE/PATH' in one_line(capsys)
    assert nova.servers.all == {}
    assert not (tmp_path / 'jobs').exists() or \
        list((tmp_path / 'jobs').iterdir()) == []


@pytest.mark.parametrize('scenarios', ['sc7..sc1', 'sc3..sc2', ''])
def test_a_reversed_or_empty_scenario_range(capsys, scenarios):
    assert cli.main(['sim', J60, '--scenarios', scenarios]) == 2
    assert 'scenario' in one_line(capsys)
