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

import json

import pytest

from opie.bot import cli
from tests.unit.bot import helpers

J60 = str(helpers.JOBS / 'j60.yaml')


def test_plan(capsys):
    assert cli.main(['plan', J60]) == 0
    out = capsys.readouterr().out
    assert 'Dspot 21:49 (paper)' in out and 'normal-only' in out


def test_run_prints_progress_and_writes_a_report_that_adds_up(tmp_path,
                                                              capsys):
    assert cli.main(['run', J60, '--scenario', 'sc5', '--seed', '1',
                     '--report-dir', str(tmp_path)]) == 0
    out = capsys.readouterr().out
    lines = [x for x in out.splitlines() if x.startswith('[')]
    assert len(lines) > 5
    assert all('done' in x and 'cost $' in x and 'slack' in x
               for x in lines)
    assert '60/60' in lines[-1]
    rep = json.loads((tmp_path / 'j60-sc5-seed1.json').read_text())
    assert (tmp_path / 'j60-sc5-seed1.html').read_text().startswith(
        '<!DOCTYPE html>')
    assert rep['accounting']['matches_cloud_bill']
    assert rep['result']['deadline_met']
    assert ('cost $%.4f' % rep['result']['cost']) in out


def test_run_with_trace_and_terminate(tmp_path, capsys):
    trace = tmp_path / 't.csv'
    trace.write_text('time_s,flavor,event\n400,c4.large,terminate\n')
    assert cli.main(['run', J60, '--trace', str(trace), '--quiet',
                     '--report-dir', str(tmp_path)]) == 0
    rep = json.loads((tmp_path / 'j60-run-seed0.json').read_text())
    assert rep['counts']['servers_terminated'] == 2
    trace.write_text('time_s,flavor,event\n400,c9.huge,terminate\n')
    assert cli.main(['run', J60, '--trace', str(trace), '--quiet',
                     '--report-dir', str(tmp_path)]) == 2
    assert 'c9.huge' in capsys.readouterr().err


def test_missed_deadline_exits_1(tmp_path, capsys):
    assert cli.main(['run', J60, '--kh', '8', '--seed', '2', '--quiet',
                     '--normal-limit', '0', '--max-normal', '1',
                     '--report-dir', str(tmp_path)]) == 1
    assert 'miss:' in capsys.readouterr().out


def test_sim_table(capsys):
    assert cli.main(['sim', J60, '--scenarios', 'sc1,sc3', '--seeds',
                     '3']) == 0
    out = capsys.readouterr().out
    assert 'P10-P90' in out and out.count('/3') == 2
    assert cli.main(['sim', J60, '--scenarios', 'sc9']) == 2
    with pytest.raises(SystemExit) as exc:
        cli.main(['sim', J60, '--seeds', '0'])
    assert exc.value.code == 2


def test_example_files():
    import yaml
    from opie.bot.sim import scenarios
    listed = yaml.safe_load((helpers.JOBS / 'scenarios.yaml').read_text())
    assert {name: (v['kh'], v['kr']) for name, v in listed.items()} == {
        name: (sc.kh, sc.kr) for name, sc in scenarios.TABLE8.items()}
    sweep = helpers.jobfile.load(helpers.JOBS / 'sweep.yaml')
    assert len(sweep.tasks) == 12
    assert cli.main(['plan', str(helpers.JOBS / 'sweep.yaml')]) == 0


def test_plan_run_and_sim_speak_json(tmp_path, capsys):
    assert cli.main(['plan', J60, '-f', 'json']) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan['job'] == 'j60' and plan['tasks'] == 60
    assert plan['expected_cost'] < plan['baseline_cost']
    assert sum(s['tasks'] for s in plan['servers']) == 60

    assert cli.main(['run', J60, '--scenario', 'sc5', '-f', 'json',
                     '--report-dir', str(tmp_path)]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run['result']['deadline_met'] and run['simulated']
    assert run['report'] == str(tmp_path / 'j60-sc5-seed0.json')

    assert cli.main(['sim', J60, '--scenarios', 'sc1,sc3', '--seeds', '2',
                     '-f', 'json']) == 0
    sim = json.loads(capsys.readouterr().out)
    assert [row['scenario'] for row in sim['rows']] == ['sc1', 'sc3']
    assert sim['baseline_cost'] > 0


def test_a_simulated_run_stopped_at_its_horizon_bills_what_it_showed(
        tmp_path, capsys):
    # Every preemptible server lost for good, no normal server allowed:
    # the tasks are stranded until the horizon (ten deadlines).
    trace = tmp_path / 't.csv'
    flavors = ('c3.large', 'c3.xlarge', 'c4.large', 'c4.xlarge')
    trace.write_text('time_s,flavor,event\n' + ''.join(
        '400,%s,terminate\n' % f for f in flavors))
    assert cli.main(['run', J60, '--trace', str(trace), '--normal-limit',
                     '0', '--max-normal', '1', '--report-dir',
                     str(tmp_path), '--progress-every', '3600']) == 1
    out = capsys.readouterr().out
    last = [x for x in out.splitlines() if x.startswith('[')][-1]
    rep = json.loads((tmp_path / 'j60-run-seed0.json').read_text())
    assert ('cost $%.4f' % rep['result']['cost']) in last
    assert any('stopped' in note for note in rep['misses'])
    assert rep['accounting']['matches_cloud_bill']
