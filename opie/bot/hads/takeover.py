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

"""The take-over: normal servers finishing the job alone, from now.

HADS guards D one server at a time: Dspot and Alg. 7 keep room before D
on each preemptible server, and each hibernated server migrates at its own
mtt (Eq. 4).  Each of those estimates counts on the same normal servers.
When the job's normal limits bind, together they promise more than the
limits allow: several servers hibernate at once, the first to migrate
takes the normal servers the others counted on, and the last one's tasks
miss D although a normal-only run within the limits would have met it.

The take-over is the job-wide check behind them.  It maps every unfinished
task that is not running on a normal server (queued anywhere, frozen on a
hibernated server, running on a preemptible one, stranded) onto normal
servers only: the live ones and the new ones the limits still allow, each
new one after a boot.  A task counts from the fraction the executor last
read for it, and at the longest a restart can take from there: a
checkpoint it writes later is read only when it moves (reading them for
every map would cost a store read per task), and a restore costs one
dump, which an early checkpoint may not pay back
(:meth:`opie.bot.hads.fleet.Fleet.take_over_wall`).  So reading a checkpoint
never makes a map end later.  Tasks go one at a time, each to the slot
where it ends earliest; a normal server runs its queue in order on its
first free slot, so the map is also the schedule.  A live normal server
with nothing running may be given up, so that its place in the limits
goes to a better flavor.

``finish`` is when that map ends.  Waiting moves the end of a new server's
queue by the wait and that of a live server's queue by no more, so the
executor may leave tasks on preemptible servers until ``latest_start``
and must hand the job over to the map then; the take-over watch
(:mod:`opie.bot.hads.takeover_watch`) holds the map and says when.  This module
only maps, and keeps no state between maps.  The planner asks the same
question of its map at its riskiest moments
(:func:`opie.bot.sim.map_choice.survives_loss`).
"""
import dataclasses
import heapq
import itertools
import math
import typing

from opie.bot.hads import assign
from opie.bot.job import model
from opie.bot.hads import projection

EPSILON_S = 1e-6
# How close to its latest start the executor hands a job over.
PRECISION_S = 1e-3


@dataclasses.dataclass
class Target:
    """One normal server of the map: a live one (``server``) or a new one.

    ``fixed`` are the ends of the tasks it runs; its other slots are free
    from ``ready`` (a new server: from the hand-over plus a boot).
    """
    flavor: model.Flavor
    server: typing.Any
    slots: int
    fixed: typing.List[float]
    ready: typing.Optional[float]
    alpha: float
    start: float                  # the hand-over time the map assumes
    tasks: typing.List[str] = dataclasses.field(default_factory=list)
    walls: typing.List[float] = dataclasses.field(default_factory=list)

    def __post_init__(self):
        self.proj = projection.Projection(self.free(self.start))

    def free(self, start):
        """When each slot frees up if the hand-over is at ``start``."""
        idle = (start + self.alpha if self.ready is None
                else max(start, self.ready))
        return ([max(end, start) for end in self.fixed]
                + [idle] * (self.slots - len(self.fixed)))

    def add(self, task_id, wall):
        self.proj.add(wall)
        self.tasks.append(task_id)
        self.walls.append(wall)

    def finish_at(self, start):
        """When its queue ends if the hand-over is at ``start``."""
        proj = projection.Projection(self.free(start))
        for wall in self.walls:
            proj.add(wall)
        return proj.finish


@dataclasses.dataclass
class TakeOver:
    now: float
    finish: float
    # The servers the map uses; live normal servers not among them may go.
    targets: typing.List[Target]
    # The limits the map fills, or why it cannot place a task at all.
    limits: typing.Tuple[str, ...] = ()

    def finish_at(self, start):
        return max([start] + [t.finish_at(start) for t in self.targets])

    def latest_start(self, deadline):
        """The last moment the map may start and still end by D (a hair
        before, so that rounding cannot carry the end past it).

        The end moves by no more than the start, so ``D - (finish -
        now)`` is a safe answer; but where live servers' running tasks
        set the end, a later start costs nothing, and waking up at that
        answer again and again would chase the real one in ever smaller
        steps.  So it is searched for, to :data:`PRECISION_S`.
        """
        limit = deadline - EPSILON_S
        lo = self.now + limit - self.finish
        if lo < self.now or self.finish_at(lo + PRECISION_S) > limit:
            return lo
        hi = limit
        while hi - lo > PRECISION_S:
            mid = (lo + hi) / 2
            if self.finish_at(mid) <= limit:
                lo = mid
            else:
                hi = mid
        return lo


def map_tasks(fleet, now, task_ids, without=None, previous=None):
    """Map ``task_ids`` (none of them running on a normal server), as if
    server ``without`` were gone.

    Greedy maps are tried in a few orders (the longest tasks first, or
    those that fit fewer flavors; live normal servers with nothing running
    given up or kept), and so is the ``previous`` map, as it would run
    from now; the one that ends first wins.  No single order is best for
    every mix of flavors, memory and limits, and a greedy map made later
    may end later than the wait explains; the previous map cannot, which
    keeps the hand-over time from jumping into the past.
    """
    job = fleet.job
    live = [s for s in fleet.live() if not s.spot and s is not without]
    flavors = [f for f in job.normal_by_price() if f.limits[model.NORMAL]]
    walls = {t: {f.name: fleet.take_over_wall(t, f)
                 for f in flavors
                 if fleet.tasks[t].memory_mb <= f.ram_mb}
             for t in task_ids}
    for task_id in task_ids:
        if not walls[task_id]:
            return _nowhere(now, task_id)
    orders = [sorted(task_ids, key=lambda t: (-min(walls[t].values()), t))]
    if any(len(w) < len(flavors) for w in walls.values()):
        orders.append(sorted(task_ids, key=lambda t: (
            len(walls[t]), -min(walls[t].values()), t)))
    keeps = [False]
    if any(not s.running for s in live):
        keeps.append(True)
    best = None
    for order in orders:
        for keep in keeps:
            mapped = _greedy(job, now, live, flavors, walls, order, keep)
            if best is None or mapped.finish < best.finish:
                best = mapped
    if previous is not None:
        again = _replay(fleet, now, live, previous, task_ids)
        if again is not None and again.finish <= best.finish:
            best = again
    return best


def _live_targets(now, live, keep):
    """(targets the map must keep, the others by flavor name)."""
    kept, spare = [], {}
    for server in live:
        ready = max(now, server.ready_at)
        target = Target(server.flavor, server, server.slots,
                        [r.end for r in server.running.values()],
                        server.ready_at, 0.0, now)
        if server.running or keep:
            kept.append(target)
        else:
            spare.setdefault(server.flavor.name, []).append(
                (ready, server.key, target))
    for queue in spare.values():
        queue.sort(key=lambda x: x[:2], reverse=True)
    return kept, spare


def _greedy(job, now, live, flavors, walls, order, keep):
    """One greedy map: each task to the slot where it ends first."""
    alpha = job.policy.alpha_s
    seq = itertools.count()
    used = {}           # normal servers the map keeps, per flavor name
    heaps = {}          # flavor name -> [(next free, seq, Target)]
    targets = []
    kept, spare = _live_targets(now, live, keep)
    for target in kept:
        _use(target, used, heaps, seq, targets)
    for task_id in order:
        best = None
        for flavor in flavors:
            wall = walls[task_id].get(flavor.name)
            if wall is None:
                continue
            heap = heaps.get(flavor.name)
            if heap:
                key = (heap[0][0] + wall, 0, flavor.price_h[model.NORMAL])
                if best is None or key < best[0]:
                    best = (key, flavor, None)
            if _room(job, flavor.name, used):
                queue = spare.get(flavor.name)
                ready = queue[-1][0] if queue else now + alpha
                key = (ready + wall, 1, flavor.price_h[model.NORMAL])
                if best is None or key < best[0]:
                    best = (key, flavor, 'add')
        if best is None:
            return _nowhere(now, task_id, _full(job, used))
        _, flavor, add = best
        if add:
            queue = spare.get(flavor.name)
            if queue:
                target = queue.pop()[2]
            else:
                target = Target(flavor, None, job.slots(flavor), [], None,
                                alpha, now)
            _use(target, used, heaps, seq, targets)
        heap = heaps[flavor.name]
        target = heap[0][2]
        target.add(task_id, walls[task_id][flavor.name])
        heapq.heapreplace(heap, (target.proj.next_start, next(seq), target))
    return _result(job, now, targets, used)


def _replay(fleet, now, live, previous, task_ids):
    """``previous``'s servers and queue orders, run from now with the
    tasks as they stand; None where it no longer applies (a server of it
    is gone, a task is new to it, the limits no longer allow it)."""
    job = fleet.job
    wanted = set(task_ids)
    if wanted - {t for target in previous.targets for t in target.tasks}:
        return None
    kept, spare = _live_targets(now, live, keep=False)
    by_server = {id(t.server): t for t in kept}
    by_server.update((id(x[2].server), x[2])
                     for queue in spare.values() for x in queue)
    targets = list(kept)
    chosen = {id(t) for t in kept}
    used = {}
    for target in kept:
        used[target.flavor.name] = used.get(target.flavor.name, 0) + 1
    for old in previous.targets:
        if old.server is None:
            target = Target(old.flavor, None, job.slots(old.flavor), [],
                            None, job.policy.alpha_s, now)
        else:
            target = by_server.get(id(old.server))
            if target is None:
                return None
        if id(target) not in chosen:
            if not _room(job, old.flavor.name, used):
                return None
            used[old.flavor.name] = used.get(old.flavor.name, 0) + 1
            chosen.add(id(target))
            targets.append(target)
        for task_id in old.tasks:
            if task_id in wanted:
                target.add(task_id,
                           fleet.take_over_wall(task_id, target.flavor))
    return _result(job, now, targets, used)


def _result(job, now, targets, used):
    finish = max([now] + [t.proj.finish for t in targets])
    targets = [t for t in targets
               if t.tasks or (t.server is not None and t.server.running)]
    return TakeOver(now=now, finish=finish, targets=targets,
                    limits=_full(job, used))


def _nowhere(now, task_id, limits=()):
    return TakeOver(now=now, finish=math.inf, targets=[], limits=limits + (
        'task %s fits no normal server the limits leave' % task_id,))


def _full(job, used):
    return assign.full_limits(job, used, sorted(used))


def _room(job, name, used):
    return (used.get(name, 0) < job.flavors[name].limits[model.NORMAL]
            and sum(used.values()) < job.policy.max_normal)


def _use(target, used, heaps, seq, targets):
    name = target.flavor.name
    used[name] = used.get(name, 0) + 1
    heapq.heappush(heaps.setdefault(name, []),
                   (target.proj.next_start, next(seq), target))
    targets.append(target)
