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

"""OPIE's preemption notice on the OpenStack backend (issue 26): the real
NovaCloud, AgentRunner and executor, on :mod:`fake_nova`'s Nova and
agents, with a clock the test moves, so that nothing depends on timing.

A server whose metadata gets ``opie:preempt_at`` has its running task
checkpointed and stopped before that time, and the task goes on
elsewhere from that checkpoint: no work is lost.  Whatever else the
tenant writes there, the job ends as without it.
"""
import datetime

import pytest

from opie.core import contract
from opie.bot import agent
from opie.bot.hads import executor as executor_mod
from opie.bot.sim import map_choice
from opie.bot.state import stores as memory
from opie.bot.openstack import clock as clock_mod
from opie.bot.openstack import nova
from opie.bot.openstack import runner as runner_mod
from tests.unit.bot import fake_nova
from tests.unit.bot import helpers

# Wall-clock time the job starts: 2026-11-23T10:00:00Z.
T0 = 1795428000
RUNTIME = 3600.0
STEP = 10.0     # job seconds between two polls


class Clock(clock_mod.RealClock):
    """Real time as the test sets it."""

    def __init__(self):
        super().__init__(T0)
        self.wall = T0

    def now(self):
        return self.job_time(self.wall)


def stamp(job_s):
    """The notice value of job time ``job_s``, as OPIE writes it."""
    return datetime.datetime.fromtimestamp(
        T0 + job_s, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


class World:
    def __init__(self, tmp_path, tasks=1):
        self.clock = Clock()
        self.journal = memory.MemoryStateStore()
        self.store = agent.DirStore(str(tmp_path / 'store'))
        job = helpers.job([RUNTIME] * tasks,
                          flavors=[helpers.flavor('small')],
                          deadline=4 * RUNTIME)
        conn = helpers.connect({'OS_AUTH_TYPE': 'admin_token',
                                'OS_ENDPOINT': 'http://127.0.0.1:1/v2.1',
                                'OS_TOKEN': 't'})
        spec = {'kind': 'dir', 'path': self.store.root}
        self.cloud = nova.NovaCloud(
            conn, 'j-1', fake_nova.IMAGE, 'none', self.journal, self.clock,
            lambda name: runner_mod.user_data({'server': name,
                                               'store': spec}))
        self.nova = self.cloud.nova = fake_nova.FakeNova(['small'])
        self.cloud.images = fake_nova.Images()
        self.cloud.check(job)
        self.runner = runner_mod.AgentRunner(
            self.store, self.cloud.name_of, self.journal, self.clock, 1.0)
        self.runner.set_tasks(job, {})
        self.cloud.watch(self.runner.server_event)
        self.executor = executor_mod.Executor(
            map_choice.primary_map(job), self.clock, self.cloud,
            self.runner, runner_mod.AgentCheckpoints(self.runner.reader),
            self.journal, drop_at_mtt=True)

    def records(self, event):
        return [r for r in self.journal.records() if r['event'] == event]

    def poll(self):
        """One turn of the client's loop (:func:`live.loop`)."""
        self.clock.wall += STEP
        self.cloud.poll()
        self.runner.poll_all()
        self.clock.run_due()

    def run(self, until=lambda: False, polls=2000):
        for _ in range(polls):
            if self.executor.finished or until():
                return
            self.poll()
        raise AssertionError('the job never got there')

    def honest_progress(self, task_id, a):
        """What a run says it has done: its work since it started, as
        the agent measures it (it counts restores and dumps as work, so
        it never says less than the executor's model)."""
        started = [r['t'] for r in self.records('task_start')
                   if r['task'] == task_id][-1]
        return min(a['start'] + (self.clock.now() - started) / a['work_s'],
                   0.99)

    def server_of(self, task_id):
        return [r['server'] for r in self.records('task_start')
                if r['task'] == task_id][-1]


def test_a_notice_stops_the_task_with_a_checkpoint_and_loses_no_work(
        tmp_path):
    w = World(tmp_path)
    w.nova.hang_once.add('t00')
    w.nova.progress = w.honest_progress
    w.executor.start()
    w.run(until=lambda: w.records('task_start'))
    w.run(until=lambda: w.clock.now() >= 600)
    sid = w.server_of('t00')
    at = w.clock.now() + 900
    w.nova.servers.get(sid).metadata[contract.NOTICE_KEY] = stamp(at)

    w.run()

    (notice,) = w.records('server_notice')
    assert (notice['server'], notice['at']) == (sid, at)
    assert notice['running'] == ['t00'] and notice['stopping'] == ['t00']
    (stopped,) = w.records('task_stopped')
    assert stopped['server'] == sid and stopped['t'] <= at
    (lost,) = w.records('work_lost')
    assert lost['lost_s'] == 0 and lost['noticed'] is True
    latest = agent.read_json(w.store, 'checkpoints/t00/latest.json')
    first, second = w.records('task_start')
    assert second['server'] != sid
    # It goes on from where it stood, no later than its stop.
    assert second['saved'] == latest['fraction'] > 0.15
    assert [r['task'] for r in w.records('task_finish')] == ['t00']
    assert agent.read_json(w.store, 'results/t00.json')['attempt'] == 2


@pytest.mark.parametrize('value, noticed', [
    ('soon', False), (stamp(-86400), True), (stamp(10 ** 9), True),
    ('%s' % stamp(0)[:-1] + '+25:00', False)])
def test_whatever_the_tenant_writes_there_the_job_ends(tmp_path, value,
                                                       noticed):
    # A member of the project writes the key on every server of the job
    # as soon as it exists: a value that is no time, a time long past
    # (no time to save anything), a time after every run's end.
    w = World(tmp_path, tasks=3)
    w.executor.start()
    servers = list(w.nova.servers.all.values())
    for server in servers:
        server.metadata[contract.NOTICE_KEY] = value

    w.run()

    assert sorted(r['task'] for r in w.records('task_finish')) == [
        't00', 't01', 't02']
    assert w.records('task_stopped') == []
    assert len(w.records('server_notice')) == (
        len([s for s in servers if s.flavor['original_name'].endswith(
            '-preemptible')]) if noticed else 0)
    assert len(w.records('notice_unusable')) == (
        0 if noticed else len(servers))
