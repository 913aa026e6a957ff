"""The primary map (HADS Alg. 2 and 3) and the normal-only baseline.

Tasks are taken by decreasing memory.  Each goes, in this order:

1. to an already selected server, cheapest first (ties: earliest finish),
   if it ends before Dspot on a preemptible server, counting the
   checkpoint overhead ``e * (1 + ovh)`` (Alg. 3), or before D on a normal
   one;
2. to a new preemptible server whose flavor the weighted round robin picks
   (:mod:`opie.bot.wrr`), if it ends there before Dspot;
3. to a new normal server of the cheapest flavor that ends it before D.

Servers are created when the job starts, so every slot frees up at the
boot time alpha: a planned finish is a wall-clock finish.  When no normal
server can be added (limits), or none meets D, the task goes where it ends
soonest and the plan records the risk instead of failing (research note
A4): a plan is always produced.

Dspot is the policy's, capped by :func:`opie.bot.dspot.latest_safe`; a
number past the deadline is a risk line, not an error (A4).

The map is kept only if normal servers alone could finish the job by D
(the take-over, :mod:`opie.bot.takeover`) with every preemptible server
lost at once, at any moment (:func:`survives_loss`), and if it bills no
more than the baseline when nothing is lost; otherwise the plan is the
baseline itself.

The normal-only baseline runs the very same map with every server normal
and no checkpoints, as the paper's Table 9 does, when that map keeps to
the job's normal limits; otherwise it is the primary map made with normal
servers only.
"""
import dataclasses
import heapq
import itertools
import math
import typing

from opie.bot import dspot as dspot_mod
from opie.bot import fleet as fleet_mod
from opie.bot import model
from opie.bot import projection
from opie.bot import takeover
from opie.bot import wrr
from opie.bot.sim import backend


class PlanError(Exception):
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
class Plan:
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
        on a server of the plan or on a new preemptible one the limits
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
            raise PlanError('task %s fits no server the limits allow'
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
        return Plan(job=self.job, dspot=self.dspot, servers=self.servers,
                    risks=self.risks)


# The loss times the take-over check tries, besides the start: just before
# every end of a preemptible task and every start on a normal server, on a
# map with up to EXACT_LOSSES of them; on a longer map, LOSS_SAMPLES spread
# evenly and LOSS_SAMPLES where the least time is left for the most work.
EXACT_LOSSES = 256
LOSS_SAMPLES = 16


class _Frozen:
    """A planned normal task running at the loss time: when it ends."""
    __slots__ = ('end',)

    def __init__(self, end):
        self.end = end


def _loss_times(plan, fleet):
    """When losing every preemptible server at once hurts most.

    What the take-over must map changes only when a preemptible task ends
    (one task less to map) or a planned normal server starts one (the task
    stays where the plan put it).  In between, the later the loss the
    later the take-over starts, so the worst moment between two changes
    is just before the second, and the start is the worst before the
    first.
    """
    changes = {end if s.market == model.PREEMPTIBLE else start
               for s in plan.servers for _, start, end in s.tasks}
    losses = [max(t - 1e-6, 0.0) for t in sorted(changes)]
    if len(losses) > EXACT_LOSSES:
        step = len(losses) / LOSS_SAMPLES
        even = {losses[int(i * step)] for i in range(LOSS_SAMPLES)}
        losses = sorted(even | {losses[-1]} | set(
            _tightest(plan, losses, fleet, LOSS_SAMPLES)))
    return [0.0] + losses


def _tightest(plan, losses, fleet, count):
    """The ``count`` loss times with the latest bound on the take-over's
    end: the loss plus the longest lost task, or plus the lost work spread
    over every slot the normal limits allow, whichever is more.

    A task is lost if it is on a preemptible server and not ended, or on a
    normal server and not started; it counts at its shortest run on a
    normal flavor it fits.
    """
    job = plan.job
    flavors = [f for f in job.flavors.values() if f.limits[model.NORMAL]]
    if not flavors:
        return losses[:count]
    slots = min(job.policy.max_normal * max(job.slots(f) for f in flavors),
                sum(f.limits[model.NORMAL] * job.slots(f) for f in flavors))

    def wall(task_id):
        memory = fleet.tasks[task_id].memory_mb
        return min((fleet.take_over_wall(task_id, f) for f in flavors
                    if memory <= f.ram_mb), default=math.inf)

    # (the latest loss that still loses it, its run), latest first.
    lost = sorted(((end if s.market == model.PREEMPTIBLE else start,
                    wall(task_id))
                   for s in plan.servers
                   for task_id, start, end in s.tasks), reverse=True)
    bounds, work, longest, i = [], 0.0, 0.0, 0
    for loss in sorted(losses, reverse=True):
        while i < len(lost) and lost[i][0] > loss:
            work += lost[i][1]
            longest = max(longest, lost[i][1])
            i += 1
        bounds.append((loss + max(longest, work / max(slots, 1)), loss))
    return [loss for _, loss in heapq.nlargest(count, bounds)]


def take_over(plan, loss, fleet=None):
    """The take-over (:mod:`opie.bot.takeover`) if every preemptible server
    is lost at ``loss``.

    The planned normal servers keep the tasks they run then; every other
    task not yet ended is mapped again, from scratch.  A ``fleet`` of the
    plan's job may be passed in to keep its run times between calls.
    """
    fleet = fleet or fleet_mod.Fleet(plan.job)
    fleet.servers.clear()
    movable = []
    for s in plan.servers:
        order = sorted(s.tasks, key=lambda x: x[1])
        if s.market == model.PREEMPTIBLE:
            movable += [t for t, _, end in order if end > loss]
            continue
        server = fleet_mod.Server(s.key, s.key, s.flavor, s.market, s.slots,
                                  0.0, s.boot_s)
        server.running = {t: _Frozen(end) for t, start, end in order
                          if start <= loss < end}
        movable += [t for t, start, _ in order if start > loss]
        fleet.add(server)
    return takeover.map_tasks(fleet, loss, movable)


def survives_loss(plan):
    """Whether normal servers alone could finish the job by D, whenever
    every preemptible server is lost."""
    fleet = fleet_mod.Fleet(plan.job)
    return all(take_over(plan, loss, fleet).finish < plan.job.deadline_s
               for loss in _loss_times(plan, fleet))


def dry_run_cost(plan):
    """What ``plan`` bills if nothing is lost: the scheduler run on the
    simulated cloud, without preemption.

    Not the map's own sum: the scheduler bills whole allocation cycles,
    takes over at run time where the map leaves no room to, and moves
    queued work to cheaper idle servers, so either map may run cheaper
    or dearer than it reads.
    """
    return sum(b['cost'] for b in backend.run(plan).bill)


def normal_floor(job):
    """Less than any run on normal servers can bill: each task for its
    run at the lowest price per slot of a normal flavor it fits (a server
    bills at least its tasks' runs shared among its slots)."""
    flavors = [f for f in job.flavors.values()
               if f.limits[model.NORMAL] and job.slots(f)]
    return sum(min((t.runtime_on(f) * f.price_h[model.NORMAL] / job.slots(f)
                    for f in flavors if t.memory_mb <= f.ram_mb),
                   default=0.0)
               for t in job.tasks) / 3600.0


def hads_map(job):
    """The map of HADS Alg. 2-3, before the take-over check."""
    return _Builder(job).build()


def primary_map(job):
    """The HADS map, or the normal-only baseline where that is safer.

    The baseline replaces the map when the normal servers the limits
    allow could not take over from lost preemptible ones and end by D
    (:func:`survives_loss`), or when the map would bill more than the
    baseline even if nothing is lost (the baseline is run only when the
    map bills more than :func:`normal_floor`).
    """
    plan = hads_map(job)
    if not plan.count(model.PREEMPTIBLE):
        return plan
    safe = normal_only(plan)
    if not within_limits(safe):
        # No normal server may run the job: nothing to fall back on.
        return plan
    if not survives_loss(plan):
        safe.risks.append('the normal servers the limits allow could not '
                          'take over from lost preemptible ones in time: '
                          'planned on normal servers only')
        return safe
    cost = dry_run_cost(plan)
    if cost > normal_floor(job) and cost > dry_run_cost(safe):
        safe.risks.append('preemptible servers would cost more than normal '
                          'ones: planned on normal servers only')
        return safe
    return plan


def under_limits(plan, per_flavor, max_normal):
    """``plan`` to run with every normal limit replaced (``--normal-limit``).

    Limits that are raised keep the plan made with the job's own, so that
    a run "with limits that do not bind" compares the limits and not two
    plans (B5).  A limit that is lowered plans the job again: the map made
    under the job's own limits, and its take-over check, counted on
    normal servers the run may no longer have.
    """
    job = plan.job
    limited = job.with_limits(per_flavor, max_normal)
    if max_normal < job.policy.max_normal or any(
            per_flavor < f.limits[model.NORMAL] for f in job.flavors.values()):
        return primary_map(limited)
    return plan.with_job(limited)


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
    """The normal-only plan HADS is measured against.

    The paper's Table 9 runs the same map on normal servers; a map with
    more servers than the normal limits allow is no cost anyone could
    have paid, so then the job is mapped again on normal servers only.
    Limits that allow no normal server at all leave no such plan: the
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
    same = Plan(job=job, dspot=job.deadline_s, servers=servers, risks=[])
    if within_limits(same):
        return same
    try:
        return normal_map(job)
    except PlanError:
        return same
