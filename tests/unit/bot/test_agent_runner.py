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

"""The client's side of the agent protocol, against a directory store."""
from opie.bot import agent
from opie.bot.hads import checkpoint
from opie.bot.hads import interfaces
from opie.bot.state import stores as memory
from opie.bot.openstack import runner as runner_mod


class Clock:
    def now(self):
        return 42.0


def make(tmp_path):
    store = agent.DirStore(str(tmp_path))
    journal = memory.MemoryStateStore()
    runner = runner_mod.AgentRunner(store, lambda sid: 'name-' + sid,
                                    journal, Clock(), speed=10.0)
    runner.commands = {'t1': 'true', 't2': 'true'}
    events = []
    runner.watch(events.append)
    return store, journal, runner, events


RUN = checkpoint.TaskRun(start=0.0, work_s=100.0, checkpoints=(0.5,),
                         dump_s=10.0, restore_s=0.0)


def finish(store, name, task, attempt, committed=True):
    agent.write_json(store, 'servers/%s/status.json' % name, {
        'heartbeat': 0, 'tasks': {task: {
            'attempt': attempt, 'state': 'finished', 'progress': 1.0,
            'committed': committed}}})


def test_assignment_carries_attempt_and_wall_checkpoint_times(tmp_path):
    store, _, runner, _ = make(tmp_path)

    runner.start('s1', 't1', RUN)
    runner.start('s2', 't1', RUN)

    a = agent.read_json(store, 'servers/name-s2/assign.json')['t1']
    assert a['attempt'] == 2
    # 50 s of work and one dump, at 10 job seconds per wall second.
    assert a['checkpoints_at'] == [6.0]


def test_finished_report_ends_the_task_once(tmp_path):
    store, journal, runner, events = make(tmp_path)
    runner.start('s1', 't1', RUN)
    finish(store, 'name-s1', 't1', 1)
    store.create('results/t1.json', b'{"server": "name-s1", "attempt": 1}')

    runner.poll_all()
    runner.poll_all()

    assert events == [interfaces.TaskEvent(interfaces.FINISHED, 's1', 't1')]
    assert agent.read_json(store, 'servers/name-s1/assign.json') == {}
    assert journal.records() == []


def test_duplicate_run_is_journalled(tmp_path):
    store, journal, runner, events = make(tmp_path)
    runner.start('s0', 't1', RUN)
    runner.start('s1', 't1', RUN)
    finish(store, 'name-s1', 't1', 2, committed=False)
    store.create('results/t1.json', b'{"server": "name-s0", "attempt": 1}')

    runner.poll_all()

    assert [r['event'] for r in journal.records()] == ['task_duplicate']
    assert len(events) == 1


def test_task_committed_elsewhere_is_not_run_again(tmp_path):
    store, journal, runner, events = make(tmp_path)
    runner.start('s0', 't2', RUN)
    runner.server_event(interfaces.ServerEvent(interfaces.TERMINATED, 's0'))
    store.create('results/t2.json', b'{"server": "name-s0", "attempt": 1}')
    runner.start('s1', 't2', RUN)

    runner.poll_all()

    assert events == [interfaces.TaskEvent(interfaces.FINISHED, 's1', 't2')]
    assert [r['event'] for r in journal.records()] == [
        'task_found_committed']
    assert agent.read_json(store, 'servers/name-s1/assign.json') == {}


def test_a_lost_server_reports_nothing_more(tmp_path):
    store, _, runner, events = make(tmp_path)
    runner.start('s1', 't1', RUN)
    runner.server_event(interfaces.ServerEvent(interfaces.TERMINATED, 's1'))
    store.create('results/t1.json', b'{"server": "name-x", "attempt": 9}')

    runner.poll_all()

    assert events == []


def test_user_data_is_a_script_running_the_agent():
    text = runner_mod.user_data({'server': 's', 'store': {'kind': 'dir',
                                                          'path': '/x'}})
    assert text.startswith('#!/usr/bin/env python3\n')
    assert 'main(json.loads(' in text
    compile(text, 'user-data', 'exec')


def report(store, name, task, attempt, state):
    agent.write_json(store, 'servers/%s/status.json' % name, {
        'heartbeat': 0, 'tasks': {task: {
            'attempt': attempt, 'state': state, 'progress': 0.5}}})


def test_a_stop_is_asked_of_the_agent_and_its_stop_reported_once(tmp_path):
    store, journal, runner, events = make(tmp_path)
    runner.start('s1', 't1', RUN)

    runner.stop('s1', 't1')
    assert agent.read_json(store, 'servers/name-s1/assign.json')['t1'][
        'stop'] is True
    report(store, 'name-s1', 't1', 1, 'running')
    runner.poll_all()
    assert events == []

    report(store, 'name-s1', 't1', 1, 'stopped')
    runner.poll_all()
    runner.poll_all()

    assert events == [interfaces.TaskEvent(interfaces.STOPPED, 's1', 't1')]
    assert agent.read_json(store, 'servers/name-s1/assign.json') == {}
    assert journal.records() == []


def test_a_stop_nobody_asked_for_is_no_stop(tmp_path):
    # A task can write its server's status: a forged stop, or the stop
    # of an earlier attempt, moves nothing.
    store, _, runner, events = make(tmp_path)
    runner.start('s1', 't1', RUN)
    report(store, 'name-s1', 't1', 1, 'stopped')
    runner.poll_all()
    runner.stop('s1', 't1')
    report(store, 'name-s1', 't1', 0, 'stopped')
    runner.poll_all()

    assert events == []
    assert 't1' in agent.read_json(store, 'servers/name-s1/assign.json')


def test_a_stop_of_a_task_on_a_lost_server_asks_nothing(tmp_path):
    store, _, runner, events = make(tmp_path)
    runner.start('s1', 't1', RUN)
    runner.server_event(interfaces.ServerEvent(interfaces.TERMINATED, 's1'))

    runner.stop('s1', 't1')
    runner.stop('s2', 't1')

    assert events == []
    assert 'stop' not in agent.read_json(
        store, 'servers/name-s1/assign.json')['t1']
