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

"""The task agent against a directory store, with real task processes."""
import json
import os
import sys
import time

import pytest

from opie.bot import agent
from opie.bot.state import tasklogs

TASK = ('%s -c "import os, time; p = os.environ[\'OPIE_STATE_DIR\']; '
        'n = int(open(p + \'/n\').read()) if os.path.exists(p + \'/n\') '
        'else 0; open(p + \'/n\', \'w\').write(str(n + 1)); '
        'open(p + \'/progress\', \'w\').write(\'0.5\'); time.sleep(%s); '
        'print(\'ran\', n)"')


def assignment(attempt=1, sleep=0.0, checkpoints_at=()):
    return {'attempt': attempt, 'command': TASK % (sys.executable, sleep),
            'start': 0.0, 'work_s': 1.0, 'retries': 0,
            'checkpoints_at': list(checkpoints_at)}


def make(tmp_path, name='s1'):
    store = agent.DirStore(str(tmp_path / 'store'))
    config = {'server': name, 'store': {'kind': 'dir', 'path': store.root}}
    a = agent.Agent(config, str(tmp_path / name))
    return store, a


def cycle_until(a, store, state, limit=10.0):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        a.cycle()
        status = agent.read_json(store, 'servers/%s/status.json' % a.server)
        tasks = status['tasks']
        if tasks and all(t['state'] == state for t in tasks.values()):
            return tasks
        time.sleep(0.05)
    raise AssertionError('agent never reached %s: %s' % (state, tasks))


def test_dir_store_create_is_exclusive(tmp_path):
    store = agent.DirStore(str(tmp_path))
    assert store.create('results/t1.json', b'first')
    assert not store.create('results/t1.json', b'second')
    assert store.get('results/t1.json') == b'first'
    assert store.list('results/') == ['results/t1.json']


def test_task_runs_and_its_result_is_committed_once(tmp_path):
    store, a = make(tmp_path)
    agent.write_json(store, 'servers/s1/assign.json', {'t1': assignment()})

    tasks = cycle_until(a, store, 'finished')

    assert tasks['t1']['committed'] is True
    result = agent.read_json(store, 'results/t1.json')
    assert result['server'] == 's1' and result['exit_status'] == 0
    assert 'ran 0' in result['output']


def test_duplicate_run_is_reported_not_committed(tmp_path):
    store, first = make(tmp_path, 's1')
    _, second = make(tmp_path, 's2')
    for name in ('s1', 's2'):
        agent.write_json(store, 'servers/%s/assign.json' % name,
                         {'t1': assignment()})

    cycle_until(first, store, 'finished')
    tasks = cycle_until(second, store, 'finished')

    assert tasks['t1']['committed'] is False
    assert agent.read_json(store, 'results/t1.json')['server'] == 's1'


def test_checkpoint_restores_state_on_another_server(tmp_path):
    store, first = make(tmp_path, 's1')
    agent.write_json(store, 'servers/s1/assign.json',
                     {'t1': assignment(sleep=30, checkpoints_at=[0.3])})
    end = time.monotonic() + 10
    while agent.read_json(store, 'checkpoints/t1/latest.json') is None:
        assert time.monotonic() < end
        first.cycle()
        time.sleep(0.05)
    # The client takes the task away: the agent kills it.
    agent.write_json(store, 'servers/s1/assign.json', {})
    first.cycle()
    assert first.runs == {}
    latest = agent.read_json(store, 'checkpoints/t1/latest.json')
    assert latest['fraction'] == pytest.approx(0.5)

    resumes_from_its_checkpoint_elsewhere(tmp_path, store)


def resumes_from_its_checkpoint_elsewhere(tmp_path, store):
    """A second server runs t1's next attempt to its end: its state
    directory came back, so the second run counted on from 1."""
    _, second = make(tmp_path, 's2')
    agent.write_json(store, 'servers/s2/assign.json',
                     {'t1': assignment(attempt=2)})
    cycle_until(second, store, 'finished')
    assert 'ran 1' in agent.read_json(store, 'results/t1.json')['output']


def test_failing_command_is_retried_then_reported_failed(tmp_path):
    store, a = make(tmp_path)
    failing = dict(assignment(), command='exit 7', retries=1)
    agent.write_json(store, 'servers/s1/assign.json', {'t1': failing})

    tasks = cycle_until(a, store, 'failed')

    assert tasks['t1']['exit_status'] == 7
    assert a.over[('t1', 1)]['state'] == 'failed'
    assert json.loads(store.get('results/t1.json'))['exit_status'] == 7


def staged(store, path, data, executable=False):
    key = 'inputs/%s' % path.replace('/', '_')
    store.put(key, data)
    return {path: {'object': key, 'exec': executable}}


def test_inputs_are_staged_in_the_working_directory(tmp_path):
    store, a = make(tmp_path)
    inputs = staged(store, 'bin/run.sh', b'echo staged "$@"\n', True)
    inputs.update(staged(store, 'data/in.txt', b'data\n'))
    agent.write_json(store, 'servers/s1/assign.json', {'t1': dict(
        assignment(), command='./bin/run.sh $(cat data/in.txt)',
        inputs=inputs)})

    cycle_until(a, store, 'finished')

    result = agent.read_json(store, 'results/t1.json')
    assert result['output'] == 'staged data\n'


@pytest.mark.parametrize('path', ['../../../../escape', '/tmp/escape',
                                  'a/../..', ''])
def test_an_assignment_cannot_stage_outside_the_task(tmp_path, path):
    store, a = make(tmp_path)
    store.put('inputs/x', b'planted')
    agent.write_json(store, 'servers/s1/assign.json', {'t1': dict(
        assignment(), inputs={path: {'object': 'inputs/x', 'exec': True}})})

    tasks = cycle_until(a, store, 'failed')

    result = agent.read_json(store, 'results/t1.json')
    assert tasks['t1']['committed'] and result['exit_status'] is None
    assert 'input' in result['error']
    assert sorted(os.listdir(tmp_path)) == ['s1', 'store']
    assert not os.path.exists('/tmp/escape')


def test_a_missing_input_object_fails_the_task(tmp_path):
    store, a = make(tmp_path)
    agent.write_json(store, 'servers/s1/assign.json', {'t1': dict(
        assignment(), inputs={'x': {'object': 'inputs/gone'}})})

    cycle_until(a, store, 'failed')

    assert 'x' in agent.read_json(store, 'results/t1.json')['error']


def test_outputs_skip_links_and_what_is_too_big(tmp_path, monkeypatch):
    monkeypatch.setattr(agent, 'MAX_FILE', 100)
    secret = tmp_path / 'secret'
    secret.write_text('not for the store')
    (tmp_path / 'secrets').mkdir()
    (tmp_path / 'secrets' / 'key').write_text('not for the store')
    command = ('mkdir -p out/sub && echo ok > out/a.txt && '
               'echo deep > out/sub/b.txt && head -c 101 /dev/zero > '
               'out/big.txt && ln -s %s out/link.txt && ln -s %s out/dir'
               % (secret, tmp_path / 'secrets'))
    store, a = make(tmp_path)
    agent.write_json(store, 'servers/s1/assign.json', {'t1': dict(
        assignment(), command=command, outputs=['out/**', 'nothing*'])})

    cycle_until(a, store, 'finished')

    outputs = agent.read_json(store, 'results/t1.json')['outputs']
    assert outputs['files'] == ['out/a.txt', 'out/sub/b.txt']
    assert sorted(outputs['skipped']) == ['out/big.txt', 'out/dir',
                                          'out/link.txt']
    uploaded = store.list('outputs/')
    assert [k[len(outputs['prefix']):] for k in uploaded] == \
        ['out/a.txt', 'out/sub/b.txt']
    assert store.get(outputs['prefix'] + 'out/sub/b.txt') == b'deep\n'


def test_the_whole_log_is_kept_in_pieces(tmp_path, monkeypatch):
    monkeypatch.setattr(agent, 'LOG_CHUNK', 1000)
    store, a = make(tmp_path)
    command = '%s -c "print(\'x\' * 9999)"' % sys.executable
    agent.write_json(store, 'servers/s1/assign.json',
                     {'t1': dict(assignment(), command=command)})

    cycle_until(a, store, 'finished')

    result = agent.read_json(store, 'results/t1.json')
    assert len(result['output']) == agent.OUTPUT_TAIL
    keys = store.list(result['log'])
    assert len(keys) == 10
    assert b''.join(store.get(k) for k in keys) == b'x' * 9999 + b'\n'


def test_match_reads_star_question_and_double_star():
    match = agent.matcher(['*.txt', 'out/**', 'r?n/**/x'])

    assert [p for p in ['a.txt', 'sub/a.txt', 'out/a/b', 'out', 'run/x',
                        'run/a/b/x', 'ran/y'] if match(p)] == \
        ['a.txt', 'out/a/b', 'run/x', 'run/a/b/x']


def test_a_running_tasks_log_so_far(tmp_path):
    store, a = make(tmp_path)
    go = tmp_path / 'go'
    command = ('%s -c "import os, time\nprint(\'so far\', flush=True)\n'
               'while not os.path.exists(%r): time.sleep(0.01)\n'
               'print(\'the end\')"' % (sys.executable, str(go)))
    agent.write_json(store, 'servers/s1/assign.json',
                     {'t1': dict(assignment(), command=command)})
    end = time.monotonic() + 10
    while tasklogs.run_prefix(store, 't1') is None or b''.join(
            tasklogs.pieces(store, tasklogs.run_prefix(store, 't1'))) \
            != b'so far\n':
        assert time.monotonic() < end, 'no log while running'
        a.cycle()
        time.sleep(0.02)
    assert a.runs['t1'].proc.poll() is None

    go.touch()
    cycle_until(a, store, 'finished')

    prefix = tasklogs.run_prefix(store, 't1')
    assert prefix == agent.read_json(store, 'results/t1.json')['log']
    assert b''.join(tasklogs.pieces(store, prefix)) == b'so far\nthe end\n'
    assert b''.join(tasklogs.pieces(store, prefix, tail=1)) == b'the end\n'


def test_a_task_asked_to_stop_checkpoints_where_it_stands_and_stops(
        tmp_path):
    store, first = make(tmp_path, 's1')
    go = tmp_path / 'go'
    # It counts its runs in its state, then, once told to go (after the
    # agent's last look), says how far it is and writes to its output.
    running = dict(assignment(), command=(
        '%s -c "import os, time\n'
        'p = os.environ[\'OPIE_STATE_DIR\']\n'
        'open(p + \'/n\', \'w\').write(\'1\')\n'
        'while not os.path.exists(%r): time.sleep(0.01)\n'
        'open(p + \'/progress\', \'w\').write(\'0.5\')\n'
        'print(\'saved\', flush=True)\n'
        'time.sleep(30)"' % (sys.executable, str(go))))
    agent.write_json(store, 'servers/s1/assign.json', {'t1': running})
    first.cycle()
    go.touch()
    state = os.path.join(tmp_path, 's1', 't1', '1')
    end = time.monotonic() + 10
    while b'saved' not in (tmp_path / 's1' / 't1' / '1' /
                           'output').read_bytes():
        assert time.monotonic() < end
        time.sleep(0.01)
    assert os.path.exists(os.path.join(state, 'state', 'progress'))
    run = first.runs['t1']

    agent.write_json(store, 'servers/s1/assign.json',
                     {'t1': dict(running, stop=True)})
    first.cycle()

    status = agent.read_json(store, 'servers/s1/status.json')['tasks']
    assert status['t1']['state'] == 'stopped'
    assert status['t1']['progress'] == pytest.approx(0.5)
    assert run.proc.poll() is not None
    assert first.runs == {}
    assert agent.read_json(store, 'results/t1.json') is None
    # Its whole output is in the store.
    assert b''.join(tasklogs.pieces(store, 'logs/t1/1-s1/')) == b'saved\n'
    latest = agent.read_json(store, 'checkpoints/t1/latest.json')
    assert latest['fraction'] == pytest.approx(0.5)
    assert latest['server'] == 's1'
    # Asked again, it does not run again.
    first.cycle()
    assert first.runs == {}

    resumes_from_its_checkpoint_elsewhere(tmp_path, store)


def test_a_task_that_ended_before_its_stop_commits(tmp_path):
    store, a = make(tmp_path)
    agent.write_json(store, 'servers/s1/assign.json', {'t1': assignment()})
    a.cycle()
    if 't1' in a.runs:
        a.runs['t1'].proc.wait()
    agent.write_json(store, 'servers/s1/assign.json',
                     {'t1': dict(assignment(), stop=True)})
    tasks = cycle_until(a, store, 'finished')
    assert tasks['t1']['committed'] is True
