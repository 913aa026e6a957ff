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

"""Hostile tasks against the running client, through the job's store.

A task can write any object of its job's store (its agent's key is on
its server).  Whatever it writes, the client polling the store goes on:
an object that is not what an agent writes (not JSON, not a dict, keys
missing, larger than its kind's cap) is journalled once and read as
absent, and a result counts only if it is of a run the client assigned
(the task's server and attempt); a ``file://`` store reads and writes
nothing outside its root, and a fetch leaves none of its temporary files.
"""
import os

import pytest

from opie.bot import agent
from opie.bot import cli
from opie.bot.hads import interfaces
from opie.bot.state import outputs
from opie.bot.openstack import runner as runner_mod
from tests.unit.bot.test_agent_runner import RUN, finish, make
from tests.unit.bot.test_task_io_attacks import DictStore

FORGED = [b'{not json', b'\xff\xfe', b'[1, 2]', b'null', b'{}',
          b'{"server": "name-s1"}', b'{"attempt": 1}',
          b'{"server": ["name-s1"], "attempt": 1}',
          b'{"server": "name-s1", "attempt": "1"}']


def unusable(journal):
    return [r for r in journal.records() if r['event'] == 'store_unusable']


@pytest.mark.parametrize('body', FORGED)
def test_a_forged_result_is_journalled_once_and_not_committed(tmp_path,
                                                              body):
    store, journal, runner, events = make(tmp_path)
    runner.start('s1', 't1', RUN)
    store.create('results/t1.json', body)

    runner.poll_all()
    runner.poll_all()

    assert events == []
    assert runner.results() == set()
    [record] = unusable(journal)
    assert record['key'] == 'results/t1.json' and record['reason']
    assert 't1' in agent.read_json(store, 'servers/name-s1/assign.json')


@pytest.mark.parametrize('server,attempt', [('name-s1', 2), ('name-s2', 1),
                                            ('name-old', 1)])
def test_a_result_of_no_run_the_client_assigned_is_not_committed(
        tmp_path, server, attempt):
    store, journal, runner, events = make(tmp_path)
    runner.start('s1', 't1', RUN)
    agent.write_json(store, 'results/t1.json',
                     {'server': server, 'attempt': attempt})
    finish(store, 'name-s1', 't1', 1, committed=False)

    runner.poll_all()

    assert events == [] and runner.results() == set()
    assert [r['key'] for r in unusable(journal)] == ['results/t1.json']


def test_a_result_of_an_earlier_run_is_committed(tmp_path):
    store, journal, runner, events = make(tmp_path)
    runner.start('s0', 't1', RUN)
    runner.server_event(interfaces.ServerEvent(interfaces.TERMINATED, 's0'))
    runner.start('s1', 't1', RUN)
    agent.write_json(store, 'results/t1.json',
                     {'server': 'name-s0', 'attempt': 1})

    runner.poll_all()

    assert events == [interfaces.TaskEvent(interfaces.FINISHED, 's1', 't1')]
    assert runner.results() == {'t1'}


def test_a_resumed_runner_knows_the_journalled_runs(tmp_path):
    store, journal, runner, events = make(tmp_path)
    runner.started('t1', 'name-s0')
    runner.started('t1', 'name-s1')
    agent.write_json(store, 'results/t1.json',
                     {'server': 'name-s0', 'attempt': 1})
    agent.write_json(store, 'results/t2.json',
                     {'server': 'name-s0', 'attempt': 2})

    assert runner.results() == {'t1'}
    assert runner.attempts == {'t1': 2}


@pytest.mark.parametrize('body', FORGED[:4] + [
    b'{"tasks": 5}', b'{"tasks": {"t1": 5}}', b'{"tasks": {"t1": {}}}',
    b'{"tasks": {"t1": {"attempt": 1, "state": "finished"}}}',
    b'{"tasks": {"t1": {"attempt": 1, "state": "gone", "progress": 1}}}',
    b'{"tasks": {"t1": {"attempt": 1, "state": "running",'
    b' "progress": NaN}}}'])
def test_a_forged_status_is_no_report(tmp_path, body):
    store, journal, runner, events = make(tmp_path)
    runner.start('s1', 't1', RUN)
    store.put('servers/name-s1/status.json', body)

    runner.poll_all()
    runner.poll_all()

    assert events == []
    assert runner.poll('s1', 't1') == interfaces.TaskStatus(running=True,
                                                            progress=0.0)
    assert [r['key'] for r in unusable(journal)] == [
        'servers/name-s1/status.json']


def test_a_reported_end_without_a_result_of_the_task_is_no_end(tmp_path):
    store, journal, runner, events = make(tmp_path)
    runner.start('s1', 't1', RUN)
    finish(store, 'name-s1', 't1', 1)

    runner.poll_all()

    assert events == []
    store.create('results/t1.json', b'{"server": "name-s1", "attempt": 1}')
    runner.poll_all()
    assert events == [interfaces.TaskEvent(interfaces.FINISHED, 's1', 't1')]


@pytest.mark.parametrize('body', FORGED[:4] + [
    b'{"fraction": "x", "server": "s", "written_at": 0, "seq": 1}',
    b'{"fraction": 0.5, "server": "s", "written_at": 0}'])
def test_a_forged_checkpoint_pointer_is_no_checkpoint(tmp_path, body):
    store, journal, runner, _ = make(tmp_path)
    checkpoints = runner_mod.AgentCheckpoints(runner.reader)
    store.put('checkpoints/t1/latest.json', body)

    assert checkpoints.latest('t1') is None
    assert checkpoints.taken() == 0
    assert [r['key'] for r in unusable(journal)] == [
        'checkpoints/t1/latest.json']


@pytest.mark.parametrize('body', FORGED[:4] + [b'{"t1": 5}',
                                               b'{"t1": {"attempt": "x"}}'])
def test_a_forged_assignment_is_none_on_resume(tmp_path, body):
    store, journal, runner, _ = make(tmp_path)
    store.put('servers/name-s1/assign.json', body)

    assert runner.adopt('s1') == {}
    assert len(unusable(journal)) == 1


def test_an_object_over_its_cap_is_unusable(tmp_path):
    store, journal, runner, events = make(tmp_path)
    runner.start('s1', 't1', RUN)
    store.create('results/t1.json', b'{"server": "name-s1", "attempt": 1'
                 + b' ' * agent.SMALL_OBJECT + b'}')

    runner.poll_all()

    assert events == []
    assert 'larger than' in unusable(journal)[0]['reason']


def test_a_file_store_refuses_objects_over_the_cap(tmp_path):
    store = agent.DirStore(str(tmp_path))
    store.put('a', b'x' * 11)

    with pytest.raises(ValueError, match='larger than 10 bytes'):
        store.get('a', limit=10)
    assert store.get('a', limit=11) == b'x' * 11


@pytest.mark.parametrize('key', ['logs/t/1-s/0', 'logs/t/1-s'])
def test_a_file_store_follows_no_link_on_the_way(tmp_path, key):
    outside = tmp_path / 'outside'
    (outside / 't' / '1-s').mkdir(parents=True)
    (outside / 't' / '1-s' / '0').write_text('secret')
    root = tmp_path / 'store'
    root.mkdir()
    os.symlink(str(outside), str(root / 'logs'))
    store = agent.DirStore(str(root))

    with pytest.raises(ValueError, match='symbolic link'):
        store.get('logs/t/1-s/0')
    with pytest.raises(ValueError, match='symbolic link'):
        store.put(key + '/x', b'planted')
    assert store.list('logs/') == []
    assert sorted(p.name for p in outside.rglob('*')) == ['0', '1-s', 't']


def test_a_fetch_removes_the_temporary_files_a_kill_left(tmp_path):
    store = DictStore()
    store.put('outputs/t/1-s/sub/new', b'data')
    agent.write_json(store, 'results/t.json', {
        'outputs': {'prefix': 'outputs/t/1-s/', 'files': ['sub/new']}})
    below = tmp_path / 'job-1' / 'outputs' / 't' / 'sub'
    below.mkdir(parents=True)
    left = ['.opie-0123456789abcdef.tmp', '.opie-notours.tmp',
            'result.opie-0123456789abcdef.tmp',
            '.opie-0123456789abcdef.tmp.keep']
    for name in left:
        (below / name).write_bytes(b'x')
    (below.parent / '.opie-fedcba9876543210.tmp').write_bytes(b'x')
    os.mkdir(str(below / '.opie-aaaaaaaaaaaaaaaa.tmp'))

    outputs.fetch_task(store, str(tmp_path), 'job-1', 't')

    assert sorted(p.name for p in below.iterdir()) == sorted(
        left[1:] + ['.opie-aaaaaaaaaaaaaaaa.tmp', 'new'])
    assert sorted(p.name for p in below.parent.iterdir()) == ['sub']


def test_the_tail_bound_is_an_integer(capsys):
    with pytest.raises(SystemExit):
        cli.main(['logs', 'job', 't', '--tail', '2000000'])
    assert 'argument --tail: must be <= 1000000, got 2000000' in \
        capsys.readouterr().err
