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

import pytest

from opie.bot.hads import checkpoint
from opie.bot.hads import interfaces
from opie.bot.job import model
from opie.bot.state import stores
from opie.bot.sim import clock as clock_mod
from opie.bot.sim import cloud as cloud_mod
from opie.bot.sim import preemption
from opie.bot.sim import runner as runner_mod
from tests.unit.bot import helpers


def test_clock_runs_timers_in_order_and_skips_cancelled():
    clock = clock_mod.SimClock()
    seen = []
    clock.call_at(5, seen.append, 'b')
    clock.call_at(1, seen.append, 'a')
    dropped = clock.call_at(3, seen.append, 'x')
    clock.cancel(dropped)
    clock.call_at(50, seen.append, 'late')
    clock.run(until=10)
    assert seen == ['a', 'b'] and clock.now() == 5


class _World:
    def __init__(self, boot=100.0):
        self.clock = clock_mod.SimClock()
        self.cloud = cloud_mod.SimCloud(self.clock, boot)
        self.store = stores.MemoryCheckpointStore()
        self.runner = runner_mod.SimRunner(self.clock, self.cloud,
                                           self.store)
        self.events = []
        self.cloud.watch(lambda e: self.events.append(
            (self.clock.now(), e.kind, e.server_id)))
        self.runner.watch(lambda e: self.events.append(
            (self.clock.now(), e.kind, e.task_id)))

    def at(self, t, fn, *args):
        self.clock.call_at(t, fn, *args)


def test_boot_billing_and_hibernation_not_billed():
    w = _World()
    f = helpers.flavor('f')
    sid = w.cloud.create_server('s', f, preemptible=True)
    w.at(300, w.cloud.hibernate, 'f')
    w.at(700, w.cloud.resume, 'f')
    w.at(1000.2, w.cloud.delete_server, sid)
    w.clock.run(until=5000)
    assert w.events == [(100, interfaces.ACTIVE, sid),
                        (300, interfaces.HIBERNATED, sid),
                        (700, interfaces.RESUMED, sid)]
    (bill,) = w.cloud.bill()
    assert bill['billed_s'] == 601      # 1000.2 - 400 hibernated, rounded up
    assert bill['cost'] == pytest.approx(601 * 0.03 / 3600)


def test_hibernation_during_boot_delays_active_and_new_servers_start_frozen():
    w = _World()
    f = helpers.flavor('f')
    first = w.cloud.create_server('s1', f, preemptible=True)
    w.at(40, w.cloud.hibernate, 'f')
    second = []
    w.at(50, lambda: second.append(w.cloud.create_server('s2', f, True)))
    normal = w.cloud.create_server('n', f, preemptible=False)
    w.at(240, w.cloud.resume, 'f')
    w.clock.run(until=5000)
    active = {sid: t for t, kind, sid in w.events if kind == interfaces.ACTIVE}
    assert active == {normal: 100, first: 300, second[0]: 340}


def test_terminate_loses_the_servers_and_stops_billing():
    w = _World()
    f = helpers.flavor('f')
    sid = w.cloud.create_server('s', f, preemptible=True)
    w.at(500, w.cloud.terminate, 'f')
    w.clock.run(until=5000)
    assert w.events[-1] == (500, interfaces.TERMINATED, sid)
    assert w.cloud.bill()[0]['billed_s'] == 500


def _task_run(runtime=400):
    job = helpers.job([runtime], memory=10)
    f = job.flavors['f']
    return job, checkpoint.plan_run(job.policy, job.tasks[0], f,
                                    model.PREEMPTIBLE)


def test_runner_freezes_and_writes_checkpoints_it_passed():
    w = _World(boot=0)
    job, run = _task_run()
    f = job.flavors['f']
    sid = w.cloud.create_server('s', f, preemptible=True)
    w.at(1, w.runner.start, sid, 't00', run)
    w.at(250, w.cloud.hibernate, 'f')
    w.at(1250, w.cloud.resume, 'f')
    w.clock.run(until=10000)
    # 3 checkpoints at 25/50/75 %; by t=250 two were written.
    finished = [t for t, kind, _ in w.events if kind == interfaces.FINISHED]
    assert finished == [pytest.approx(1 + run.wall_s + 1000)]
    assert w.store.taken == 3
    assert w.store.latest('t00').fraction == 0.75


def test_runner_kill_keeps_latest_checkpoint_for_restore():
    w = _World(boot=0)
    job, run = _task_run()
    f = job.flavors['f']
    sid = w.cloud.create_server('s', f, preemptible=True)
    w.runner.start(sid, 't00', run)
    w.at(250, w.runner.kill, sid, 't00')
    w.clock.run(until=10000)
    latest = w.store.latest('t00')
    assert latest.fraction == 0.5 and latest.server_id == sid
    assert not [e for e in w.events if e[1] == interfaces.FINISHED]
    again = checkpoint.plan_run(job.policy, job.tasks[0], f, model.NORMAL,
                                latest.fraction)
    with pytest.raises(ValueError):
        w.runner.restore(sid, 't00', again, None)
    w.runner.restore(sid, 't00', again, latest)
    assert w.runner.poll(sid, 't00') == interfaces.TaskStatus(True, 0.5)


def test_poisson_emulator_rates_and_seeds():
    def count(seed, kh, kr):
        w = _World()
        flavors = {'f': helpers.flavor('f'), 'g': helpers.flavor('g')}
        for name, f in flavors.items():
            w.cloud.create_server(name, f, preemptible=True)
        source = preemption.PoissonPreemptions(w.clock, w.cloud, flavors,
                                               kh, kr, 2100.0, seed)
        source.start()
        w.clock.run(until=2100.0 * 50)
        return source.events
    events = count(1, 5, 5)
    assert events == count(1, 5, 5)
    assert events != count(2, 5, 5)
    hib = [e for e in events if e['event'] == 'hibernate']
    # Alternating Exp(5/D) up and Exp(5/D) down: ~2.5 per flavor per D.
    assert 2 * 50 * 2.0 < len(hib) < 2 * 50 * 3.0
    assert {e['flavor'] for e in hib} == {'f', 'g'}
    # kr = 0: one hibernation per flavor, never a resume.
    assert [e['event'] for e in count(1, 1, 0)] == ['hibernate'] * 2


def test_trace_replay_and_its_errors(tmp_path):
    path = tmp_path / 'trace.csv'
    path.write_text('time_s,flavor,event\n10,f,hibernate\n20,f,resume\n')
    flavors = {'f': helpers.flavor('f')}
    events = preemption.read_trace(path, flavors)
    w = _World(boot=0)
    w.cloud.create_server('s', flavors['f'], preemptible=True)
    preemption.TraceReplay(w.clock, w.cloud, events).start()
    w.clock.run(until=100)
    assert [(t, k) for t, k, _ in w.events] == [
        (0, interfaces.ACTIVE), (10, interfaces.HIBERNATED),
        (20, interfaces.RESUMED)]
    for body, message in [('time_s,flavor,event\nx,f,hibernate\n', ':2:'),
                          ('time_s,flavor,event\n1,zz,hibernate\n', 'zz'),
                          ('time_s,flavor,event\n1,f,explode\n', 'explode')]:
        path.write_text(body)
        with pytest.raises(preemption.TraceError, match=message):
            preemption.read_trace(path, flavors)
