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

"""Simulated task execution on simulated servers.

A task runs for exactly its run's wall time (``TaskRun.wall_s``) unless its
server freezes or is lost.  Checkpoints are written to the CheckpointStore
as the run passes them; to avoid one timer per checkpoint they are written
at the task's next change of state (finish, freeze, kill, loss), which is
the first moment anyone can look at them.

A task asked to ``stop`` (its server has a notice) makes no more progress:
it dumps its state as it stands, which takes one dump, and then reports
``STOPPED``.  A server frozen or lost during the dump cuts it short and
nothing is written but the checkpoints already passed; a dump that ends
at the very moment the server goes is written.
"""
from opie.bot.hads import interfaces


class _Run:
    __slots__ = ('server_id', 'task_id', 'run', 'since', 'elapsed', 'timer',
                 'written', 'stopping')

    def __init__(self, server_id, task_id, run, now):
        self.server_id = server_id
        self.task_id = task_id
        self.run = run
        self.since = now         # None while frozen
        self.elapsed = 0.0       # before ``since``
        self.timer = None
        self.written = 0         # checkpoints already in the store
        self.stopping = None     # fraction being dumped on a stop

    def elapsed_at(self, now):
        return self.elapsed + (0.0 if self.since is None else now - self.since)


class SimRunner(interfaces.Runner):
    def __init__(self, clock, cloud, store):
        self.clock = clock
        self.store = store
        self._runs = {}
        self._by_server = {}
        self._listeners = []
        cloud.add_hook(self)

    # -- the port ---------------------------------------------------------

    def start(self, server_id, task_id, run):
        r = _Run(server_id, task_id, run, self.clock.now())
        self._runs[task_id] = r
        self._by_server.setdefault(server_id, set()).add(task_id)
        self._arm(r)

    def restore(self, server_id, task_id, run, checkpoint):
        if checkpoint is None or checkpoint.fraction != run.start:
            raise ValueError('run of %s does not start at its checkpoint'
                             % task_id)
        self.start(server_id, task_id, run)

    def poll(self, server_id, task_id):
        r = self._runs[task_id]
        elapsed = r.elapsed_at(self.clock.now())
        done = r.run.start + (1.0 - r.run.start) * elapsed / r.run.wall_s
        return interfaces.TaskStatus(running=r.since is not None,
                                     progress=min(done, 1.0))

    def kill(self, server_id, task_id):
        self._drop(self._runs[task_id])

    def stop(self, server_id, task_id):
        r = self._runs[task_id]
        now = self.clock.now()
        self.clock.cancel(r.timer)
        r.elapsed = r.elapsed_at(now)
        r.since = None
        self._write(r)
        r.stopping = r.run.done_after(r.elapsed)
        r.timer = self.clock.call_at(now + r.run.dump_s, self._stopped, r)

    def watch(self, callback):
        self._listeners.append(callback)

    # -- cloud hooks --------------------------------------------------------

    def server_frozen(self, server_id):
        now = self.clock.now()
        for task_id in self._by_server.get(server_id, ()):
            r = self._runs[task_id]
            r.elapsed = r.elapsed_at(now)
            r.since = None
            self.clock.cancel(r.timer)
            self._write(r)

    def server_thawed(self, server_id):
        for task_id in self._by_server.get(server_id, ()):
            r = self._runs[task_id]
            r.since = self.clock.now()
            self._arm(r)

    def server_lost(self, server_id):
        for task_id in list(self._by_server.get(server_id, ())):
            self._drop(self._runs[task_id])

    # -- internals ---------------------------------------------------------

    def _arm(self, r):
        left = r.run.wall_s - r.elapsed
        r.timer = self.clock.call_at(self.clock.now() + left, self._finish, r)

    def _write(self, r):
        saved = r.run.saved_after(r.elapsed_at(self.clock.now()))
        due = [f for f in r.run.checkpoints if f <= saved][r.written:]
        for fraction in due:
            self.store.put(interfaces.Checkpoint(
                r.task_id, fraction, r.server_id, self.clock.now()))
        r.written += len(due)
        if r.stopping is not None and r.timer.when <= self.clock.now():
            self.store.put(interfaces.Checkpoint(
                r.task_id, r.stopping, r.server_id, self.clock.now()))
            r.stopping = None

    def _drop(self, r):
        self.clock.cancel(r.timer)
        self._write(r)
        del self._runs[r.task_id]
        self._by_server[r.server_id].discard(r.task_id)

    def _finish(self, r):
        r.elapsed = r.run.wall_s
        r.since = None
        self._drop(r)
        self._report(interfaces.FINISHED, r)

    def _stopped(self, r):
        self._drop(r)
        self._report(interfaces.STOPPED, r)

    def _report(self, kind, r):
        event = interfaces.TaskEvent(kind, r.server_id, r.task_id)
        for listener in self._listeners:
            listener(event)
