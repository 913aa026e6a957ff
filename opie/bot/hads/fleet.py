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

"""The executor's view of its servers and tasks.

HADS sorts servers into busy (BR), idle (IR), hibernated (HR) and
terminated (TR) sets.  Here each server carries its state, the tasks it
runs and the tasks queued on it (Q = RT u WT), and a projection of when
those tasks will end, computed from the same run model the runner gets
(:func:`opie.bot.hads.checkpoint.plan_run`).  Booting servers count as busy, as
HADS adds a new normal server to BR the moment it asks for it.

The fleet also knows which tasks are done and which are stranded (no
server could take them yet): the executor changes them, the take-over
watch (:mod:`opie.bot.hads.takeover_watch`) reads them with the servers.
"""
import bisect
import collections
import math

from opie.bot.hads import checkpoint
from opie.bot.job import model
from opie.bot.hads import projection

BOOTING = 'booting'
BUSY = 'busy'
IDLE = 'idle'
HIBERNATED = 'hibernated'
GONE = 'gone'


class Running:
    __slots__ = ('run', 'started', 'end', 'left', 'stopped')

    def __init__(self, run, started):
        self.run = run
        self.started = started
        self.end = started + run.wall_s
        self.left = None     # wall time still to go, while frozen
        self.stopped = None  # elapsed when asked to stop: no work since

    def elapsed(self, now):
        """How long the run has lasted, frozen time excluded, up to when
        it was asked to stop."""
        if self.stopped is not None:
            return self.stopped
        left = self.end - now if self.left is None else self.left
        return min(max(self.run.wall_s - left, 0.0), self.run.wall_s)


class Server:
    def __init__(self, server_id, key, flavor, market, slots, created,
                 boot_s):
        self.id = server_id
        self.key = key
        self.flavor = flavor
        self.market = market
        self.slots = slots
        self.created = created
        self.ready_at = created + boot_s    # an estimate until ACTIVE
        self.active = False
        self.state = BOOTING
        self.running = {}
        self.waiting = []
        self.hib_since = None
        self.hib_total = 0.0
        self.ended = None
        self.mtt = None
        self.mtt_timer = None
        self.ac_timer = None
        self.notice_at = None   # when a notice says the server goes
        self.stop_timers = {}   # task id -> when it checkpoints and stops
        self.version = 0
        self.cache = None

    @property
    def spot(self):
        return self.market == model.PREEMPTIBLE

    @property
    def price_h(self):
        return self.flavor.price_h[self.market]

    def end(self, now):
        """The server is deleted or lost; close its hibernation if open."""
        if self.hib_since is not None:
            self.thaw(now)
        self.ended = now
        self.state = GONE

    def thaw(self, now):
        """Close the open hibernation; return how long it lasted."""
        away = now - self.hib_since
        self.hib_total += away
        self.hib_since = None
        return away

    def billed_s(self, now):
        """Seconds billed so far: from creation, hibernation excluded."""
        until = now if self.ended is None else self.ended
        frozen = 0.0 if self.hib_since is None else until - self.hib_since
        return until - self.created - self.hib_total - frozen

    def queue(self):
        return list(self.running) + self.waiting

    def changed(self):
        self.version += 1

    def ac_end(self, now, ac):
        """End of the current allocation cycle; hibernation shifts it."""
        origin = self.created + self.hib_total
        return origin + (math.floor((now - origin) / ac) + 1) * ac

    def sort_key(self):
        """HADS' sort_by_market then price: preemptible first."""
        return (not self.spot, self.price_h, self.key)


class Fleet:
    def __init__(self, job):
        self.job = job
        self.tasks = {t.id: t for t in job.tasks}
        self.saved = dict.fromkeys(self.tasks, 0.0)
        self.done = set()       # committed or failed: will not run again
        self.stranded = []      # waiting for a server that can take them
        self.servers = {}
        self._slots = {f.name: job.slots(f) for f in job.flavors.values()}
        self._runs = {}
        self._normal = [f for f in job.flavors.values()
                        if f.limits[model.NORMAL] > 0]
        self._redo = {}
        self._checkpoints = {}
        self._spare = {}

    def slots(self, flavor):
        return self._slots[flavor.name]

    def add(self, server):
        self.servers[server.id] = server

    def live(self):
        return [s for s in self.servers.values() if s.state != GONE]

    def in_state(self, *states):
        return [s for s in self.servers.values() if s.state in states]

    def normal_counts(self):
        """Live normal servers by flavor name."""
        return collections.Counter(s.flavor.name for s in self.live()
                                   if not s.spot)

    def run_for(self, task_id, flavor, market, saved=None):
        if saved is None:
            saved = self.saved[task_id]
        # Projections ask for the same runs over and over: keep them.
        key = (task_id, flavor.name, market, saved)
        run = self._runs.get(key)
        if run is None:
            run = self._runs[key] = checkpoint.plan_run(
                self.job.policy, self.tasks[task_id], flavor, market, saved)
        return run

    def wall(self, task_id, flavor, market):
        return self.run_for(task_id, flavor, market).wall_s

    def runtime(self, task_id, flavor):
        return self.tasks[task_id].runtime_on(flavor)

    def take_over_wall(self, task_id, flavor):
        """The longest a restart of ``task_id`` on a normal server of
        ``flavor`` can take: from the fraction it has saved, or from any
        checkpoint it may write before it moves there.

        A restore costs one dump, and a checkpoint written early on a slow
        flavor may save less work on a fast one than that: so the first
        checkpoint to come can make the restart longer than a fresh start.
        """
        run = self.run_for(task_id, flavor, model.NORMAL)
        later = self._checkpoint_after(task_id, run.start)
        if later is None:
            return run.wall_s
        return max(run.wall_s, run.dump_s + run.work_s * (1.0 - later))

    def _checkpoint_after(self, task_id, saved):
        """The first fraction past ``saved`` at which a preemptible
        server of any flavor would checkpoint the task, or None."""
        marks = self._checkpoints.get(task_id)
        if marks is None:
            task = self.tasks[task_id]
            marks = self._checkpoints[task_id] = sorted({
                p for f in self.job.flavors.values()
                if f.limits[model.PREEMPTIBLE] and task.memory_mb <= f.ram_mb
                for p in checkpoint.positions(self.job.policy, task, f)})
        i = bisect.bisect_right(marks, saved)
        return marks[i] if i < len(marks) else None

    def redo_flavor(self, task_id):
        """The fastest flavor a normal server may re-run the task on.

        The limits of each flavor are what matter, not the flavor the task
        runs on now: a fast flavor may be offered only as preemptible,
        and a slow preemptible one may have a fast normal twin.
        """
        flavor = self._redo.get(task_id)
        if flavor is None:
            task = self.tasks[task_id]
            fitting = [f for f in self._normal if task.memory_mb <= f.ram_mb]
            flavor = self._redo[task_id] = min(
                fitting, key=lambda f: (task.runtime_on(f), f.name),
                default=False)
        return flavor or None

    def worth_saving(self, task_id):
        """The least fraction of ``task_id``'s work whose checkpoint makes
        no restart on a normal server longer than one from what it has
        saved: a restore costs a dump, so from scratch a checkpoint must
        save a dump's worth of work on the fastest normal flavor.  The
        take-over counts on restarts no longer than that
        (:meth:`take_over_wall`).  Infinite if none is."""
        saved = self.saved[task_id]
        flavor = self.redo_flavor(task_id)
        if saved > 0 or flavor is None:
            return saved
        least = (checkpoint.dump_s(self.job.policy, self.tasks[task_id])
                 / self.runtime(task_id, flavor))
        # A dump as long as the whole task: no checkpoint is worth it.
        return least if least < 1.0 else math.inf

    def spare(self, task_id, flavor):
        """The time Alg. 7 keeps before D for re-running ``task_id``.

        The paper's e_m is the run time on the server's own flavor; the
        re-run is on a normal server, so the longer of the two counts.
        """
        key = (task_id, flavor.name)
        spare = self._spare.get(key)
        if spare is None:
            redo = self.redo_flavor(task_id)
            own = self.runtime(task_id, flavor)
            spare = self._spare[key] = (
                own if redo is None else max(own, self.runtime(task_id,
                                                               redo)))
        return spare

    def projection(self, server, now):
        """(Projection, expected start of each waiting task) at ``now``."""
        key = (server.version, now)
        if server.cache is not None and server.cache[0] == key:
            return server.cache[1], server.cache[2]
        ready = max(now, server.ready_at)
        free = [r.end for r in server.running.values()]
        free += [ready] * (server.slots - len(free))
        longest = max((self.spare(t, server.flavor)
                       for t in server.queue()), default=0.0)
        proj = projection.Projection(free, longest)
        starts = [proj.add(self.wall(t, server.flavor, server.market))
                  for t in server.waiting]
        server.cache = (key, proj, starts)
        return proj, starts

    def enqueue(self, server, task_id, now):
        """Append ``task_id`` to ``server``'s queue, carrying over its
        projection at ``now`` if it holds one (one slot to update instead
        of the whole queue to project again)."""
        cached = server.cache
        server.waiting.append(task_id)
        server.changed()
        if cached is None or cached[0] != (server.version - 1, now):
            return
        proj = cached[1].copy()
        start = proj.add(self.wall(task_id, server.flavor, server.market),
                         self.spare(task_id, server.flavor))
        server.cache = ((server.version, now), proj, cached[2] + [start])

    def empty_projection(self, flavor, ready):
        return projection.Projection([ready] * self.slots(flavor))
