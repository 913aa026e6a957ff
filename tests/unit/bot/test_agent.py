"""The task agent against a directory store, with real task processes."""
import json
import sys
import time

import pytest

from opie.bot import agent

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

    _, second = make(tmp_path, 's2')
    agent.write_json(store, 'servers/s2/assign.json',
                     {'t1': assignment(attempt=2)})
    cycle_until(second, store, 'finished')

    # The state directory came back: the second run counted on from 1.
    assert 'ran 1' in agent.read_json(store, 'results/t1.json')['output']


def test_failing_command_is_retried_then_reported_failed(tmp_path):
    store, a = make(tmp_path)
    failing = dict(assignment(), command='exit 7', retries=1)
    agent.write_json(store, 'servers/s1/assign.json', {'t1': failing})

    tasks = cycle_until(a, store, 'failed')

    assert tasks['t1']['exit_status'] == 7
    assert a.over[('t1', 1)]['state'] == 'failed'
    assert json.loads(store.get('results/t1.json'))['exit_status'] == 7
