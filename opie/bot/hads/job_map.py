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

"""The job map: where each task runs, as planned when the job starts.

Two maps are built here: the primary map of HADS (Alg. 2 and 3) and the
normal-only baseline it is measured against.  Building a map needs the
job alone, never a cloud, so nothing here imports a backend; which of
the two maps a job runs is chosen by :mod:`opie.bot.sim.map_choice`, which
runs them on the simulated cloud.

Tasks are taken by decreasing memory.  Each goes, in this order:

1. to an already selected server, cheapest first (ties: earliest finish),
   if it ends before Dspot on a preemptible server, counting the
   checkpoint overhead ``e * (1 + ovh)`` (Alg. 3), or before D on a normal
   one;
2. to a new preemptible server whose flavor the weighted round robin picks
   (:mod:`opie.bot.hads.wrr`), if it ends there before Dspot;
3. to a new normal server of the cheapest flavor that ends it before D.

Servers are created when the job starts, so every slot frees up at the
boot time alpha: a planned finish is a wall-clock finish.  When no normal
server can be added (limits), or none meets D, the task goes where it ends
soonest and the map records the risk instead of failing (research note
A4): a map is always produced.

Dspot is the policy's, capped by :func:`opie.bot.hads.dspot.latest_safe`; a
number past the deadline is a risk line, not an error (A4).

The normal-only baseline runs the very same map with every server normal
and no checkpoints, as the paper's Table 9 does, when that map keeps to
the job's normal limits; otherwise it is the primary map made with normal
servers only.
"""
import dataclasses
import heapq
import itertools
import typing

from opie.bot.hads import dspot as dspot_mod
from opie.bot.job import model
from opie.bot.hads import projection
from opie.bot.hads import wrr


class MapError(Exception):
    """The job cannot be mapped onto the servers its limits allow."""


@dataclasses.dataclass
class PlannedServer:
    key: str
    flavor: model.Flavor
    market: str
    slots: int
    boot_s: float
    # (task id, planned start, planned end), in the order they were placed.
    tasks: typing.List[typing.Tuple[str, float, float]] = (
        dataclasses.field(default_factory=list))

    @property
    def finish(self):
        return max((end for _, _, end in self.tasks), default=self.boot_s)

    @property
    def price_h(self):
        return self.flavor.price_h[self.market]

    @property
    def expected_cost(self):
        return self.finish * self.price_h / 3600.0


@dataclasses.dataclass
class JobMap:
    """The servers to create when ``job`` starts, the tasks each runs and
    when, and the risks seen while mapping them."""

    job: model.Job
    dspot: float
    servers: typing.List[PlannedServer]
    risks: typing.List[str]

    @property
    def makespan(self):
        return max(s.finish for s in self.servers)

    @property
    def expected_cost(self):
        return sum(s.expected_cost for s in self.servers)

    def with_job(self, job):
        """This map, executed under ``job``'s limits (e.g. raised ones)."""
        return dataclasses.replace(self, job=job)

    def count(self, market):
        return sum(1 for s in self.servers if s.market == market)

    def mix(self, market=model.PREEMPTIBLE):
        """Servers per flavor name for one market."""
        mix = {}
        for s in self.servers:
            if s.market == market:
                mix[s.flavor.name] = mix.get(s.flavor.name, 0) + 1
        return mix


def plan_duration(job, task, flavor, market):
    """Alg. 3 line 2: a task on a preemptible server may take ovh longer."""
    e = task.runtime_on(flavor)
    if market == model.PREEMPTIBLE:
        return e * (1.0 + job.policy.ckpt_overhead)
    return e


class _Builder:
    def __init__(self, job, spot=True):
        self.job = job
        self.spot = spot
        self.boot = job.policy.alpha_s
        self.servers = []
        self.risks = []
        self.dspot = self._dspot() if spot else job.deadline_s
        # Selected servers grouped by (price, market, flavor); within a
        # group the server with the earliest free slot is the only one
        # worth trying, so each group is a heap on that time.
        self._groups = {}
        self._seq = itertools.count()
        self._used = {m: {} for m in model.MARKETS}
        self._rr = wrr.RoundRobin(job.flavors.values())
        self._normal_by_price = job.normal_by_price()

    def _dspot(self):
        chosen = dspot_mod.compute(self.job)
        safe = dspot_mod.latest_safe(self.job)
        if safe is None:
            safe = self.job.deadline_s
            self.risks.append('no normal server allowed: tasks of a lost '
                              'preemptible server may have nowhere to go')
        if chosen > self.job.deadline_s:
            self.risks.append('dspot %.0f s is past the deadline (%.0f s); '
                              'planned with %.0f s' % (
                                  chosen, self.job.deadline_s,
                                  min(chosen, safe)))
        return min(chosen, safe)

    def limit_left(self, market, flavor):
        used = self._used[market]
        if used.get(flavor.name, 0) >= flavor.limits[market]:
            return False
        if market == model.NORMAL:
            return sum(used.values()) < self.job.policy.max_normal
        return True

    def fits(self, task, flavor, market, start):
        if task.memory_mb > flavor.ram_mb:
            return False
        limit = self.dspot if market == model.PREEMPTIBLE else \
            self.job.deadline_s
        return start + plan_duration(self.job, task, flavor, market) < limit

    def new_server(self, flavor, market):
        self._used[market][flavor.name] = (
            self._used[market].get(flavor.name, 0) + 1)
        prefix = 'p' if market == model.PREEMPTIBLE else 'n'
        server = PlannedServer(
            key='%s%d' % (prefix, len(self.servers)), flavor=flavor,
            market=market, slots=self.job.slots(flavor), boot_s=self.boot)
        proj = projection.Projection([self.boot] * server.slots)
        self.servers.append(server)
        group = (flavor.price_h[market], market, flavor.name)
        heapq.heappush(self._groups.setdefault(group, []),
                       (proj.next_start, next(self._seq), server, proj))
        return group

    def place(self, task, group):
        heap = self._groups[group]
        _, _, server, proj = heap[0]
        dur = plan_duration(self.job, task, server.flavor, server.market)
        start = proj.add(dur)
        server.tasks.append((task.id, start, start + dur))
        heapq.heapreplace(heap, (proj.next_start, next(self._seq),
                                 server, proj))

    def phase1(self, task):
        best = None
        for group in sorted(self._groups):
            start, _, server, proj = self._groups[group][0]
            if not self.fits(task, server.flavor, server.market, start):
                continue
            dur = plan_duration(self.job, task, server.flavor, server.market)
            key = (group[0], proj.eft_with(dur))
            if best is None or key < best[0]:
                best = (key, group)
            elif key[0] > best[0][0]:
                break
        return best and best[1]

    def phase2(self, task):
        if not self.spot:
            return None

        def allowed(name):
            flavor = self.job.flavors[name]
            return (self.limit_left(model.PREEMPTIBLE, flavor)
                    and self.fits(task, flavor, model.PREEMPTIBLE,
                                  self.boot))
        name = self._rr.next(allowed)
        if name is None:
            return None
        return self.new_server(self.job.flavors[name], model.PREEMPTIBLE)

    def phase3(self, task):
        open_ = [f for f in self._normal_by_price
                 if self.limit_left(model.NORMAL, f)
                 and task.memory_mb <= f.ram_mb]
        for flavor in open_:
            if self.fits(task, flavor, model.NORMAL, self.boot):
                return self.new_server(flavor, model.NORMAL)
        if open_:
            fastest = min(open_, key=task.runtime_on)
            self.risks.append('task %s misses the deadline even alone on '
                              'a new %s' % (task.id, fastest.name))
            return self.new_server(fastest, model.NORMAL)
        return None

    def fallback(self, task):
        """No normal server can be added: the earliest finish anywhere,
        on a server of the map or on a new preemptible one the limits
        still allow."""
        options = []
        for group, heap in self._groups.items():
            _, _, server, proj = heap[0]
            if task.memory_mb <= server.flavor.ram_mb:
                options.append((proj.eft_with(plan_duration(
                    self.job, task, server.flavor, server.market)), 0,
                    group, None))
        for flavor in self.job.flavors.values() if self.spot else ():
            if (self.limit_left(model.PREEMPTIBLE, flavor)
                    and task.memory_mb <= flavor.ram_mb):
                options.append((self.boot + plan_duration(
                    self.job, task, flavor, model.PREEMPTIBLE), 1,
                    flavor.name, flavor))
        if not options:
            raise MapError('task %s fits no server the limits allow'
                           % task.id)
        self.risks.append('task %s: normal server limits reached, placed '
                          'past its limit' % task.id)
        _, _, group, flavor = min(options, key=lambda o: o[:2])
        return group if flavor is None else self.new_server(
            flavor, model.PREEMPTIBLE)

    def build(self):
        tasks = sorted(self.job.tasks, key=lambda t: -t.memory_mb)
        for task in tasks:
            group = (self.phase1(task) or self.phase2(task)
                     or self.phase3(task) or self.fallback(task))
            self.place(task, group)
        return JobMap(job=self.job, dspot=self.dspot,
                      servers=self.servers, risks=self.risks)


def hads_map(job):
    """The map of HADS Alg. 2-3, before :mod:`opie.bot.sim.map_choice` checks
    it."""
    return _Builder(job).build()


def normal_map(job):
    """The primary map with normal servers only, within the job's limits."""
    return _Builder(job, spot=False).build()


def within_limits(plan):
    """Whether ``plan``'s servers, all normal, keep to its job's limits."""
    job = plan.job
    used = {}
    for s in plan.servers:
        used[s.flavor.name] = used.get(s.flavor.name, 0) + 1
    return (len(plan.servers) <= job.policy.max_normal
            and all(n <= job.flavors[name].limits[model.NORMAL]
                    for name, n in used.items()))


def normal_only(plan):
    """The normal-only map HADS is measured against.

    The paper's Table 9 runs the same map on normal servers; a map with
    more servers than the normal limits allow is no cost anyone could
    have paid, so then the job is mapped again on normal servers only.
    Limits that allow no normal server at all leave no such map: the
    same map is then the only price to compare with.
    """
    job = plan.job
    tasks = {t.id: t for t in job.tasks}
    servers = []
    for s in plan.servers:
        twin = PlannedServer(key=s.key, flavor=s.flavor, market=model.NORMAL,
                             slots=s.slots, boot_s=s.boot_s)
        proj = projection.Projection([s.boot_s] * s.slots)
        for task_id, _, _ in s.tasks:
            dur = tasks[task_id].runtime_on(s.flavor)
            start = proj.add(dur)
            twin.tasks.append((task_id, start, start + dur))
        servers.append(twin)
    same = JobMap(job=job, dspot=job.deadline_s, servers=servers, risks=[])
    if within_limits(same):
        return same
    try:
        return normal_map(job)
    except MapError:
        return same
