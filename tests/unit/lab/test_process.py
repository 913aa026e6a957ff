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

"""Starting, finding and stopping the lab's processes by recorded PID."""
import json
import subprocess
import sys
import time

import pytest

from opie.lab import cli
from opie.lab import process
from opie.lab import settings


@pytest.fixture
def lab(tmp_path):
    lab = settings.Lab(tmp_path)
    yield lab
    process.stop(lab, process.recorded(lab))


def _alive(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def test_start_records_and_stop_ends_the_whole_group(lab):
    # A shell whose child would outlive it if only the shell were killed.
    proc = process.start(lab, 'family', [
        'bash', '-c', 'sleep 300 & echo $! > %s/child; wait'
        % lab.root], marker='sleep 300')
    process.wait(lab, {'family': proc}, (lab.root / 'child').exists)
    child = int((lab.root / 'child').read_text())
    assert process.recorded(lab) == {'family': proc.pid}

    process.stop(lab, process.recorded(lab))
    proc.wait(timeout=10)
    assert not _alive(child)
    assert process.recorded(lab) == {}


def test_a_reused_pid_is_not_the_lab_s(lab):
    lab.run.mkdir(parents=True)
    # This very process, recorded under a command line it does not have.
    (lab.run / 'ghost.pid').write_text(json.dumps(
        {'pid': subprocess.os.getpid(), 'started': time.time(),
         'marker': 'mariadbd'}))
    assert process.recorded(lab) == {}


def test_recorded_in_start_order(lab):
    procs = {name: process.start(lab, name, ['sleep', '300'])
             for name in ('b-first', 'a-second')}
    # Until exec, a child's command line is its parent's: wait for both
    # execs, decided from what the processes show, not from a pause.
    process.wait(lab, procs, lambda: len(process.recorded(lab)) == 2,
                 timeout=60)
    assert list(process.recorded(lab)) == ['b-first', 'a-second']


def test_wait_names_the_process_that_died(lab):
    proc = process.start(lab, 'dies', [sys.executable, '-c',
                                       'print("bad config"); exit(4)'])
    with pytest.raises(process.LabError, match=r'dies exited with status '
                       r'4:\n.*bad config'):
        process.wait(lab, {'dies': proc}, lambda: False)


def test_leftovers_finds_what_runs_from_the_lab(lab):
    stray = subprocess.Popen(['sleep', '300'], cwd=lab.root)
    try:
        assert stray.pid in process.leftovers(lab)
    finally:
        stray.kill()
        stray.wait()
    assert stray.pid not in process.leftovers(lab)


def test_status_of_a_lab_that_is_down(lab, capsys, monkeypatch):
    monkeypatch.setenv('OPIE_LAB_DIR', str(lab.root))
    assert cli.main(['status']) == 1
    assert 'the lab is down' in capsys.readouterr().out


def test_up_needs_a_compute(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(['up', '--computes', '0'])
    assert exit_.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == ('opie-lab up: error: argument --computes: must be >= 1, '
                    'got 0 (see opie-lab up --help)')
