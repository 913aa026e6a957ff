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

"""Which map a job runs: the HADS map or the normal-only baseline.

:mod:`opie.bot.hads.job_map` builds both maps.  The HADS map is kept only if

* normal servers alone could finish the job by D (the take-over,
  :mod:`opie.bot.hads.takeover`) with every preemptible server lost at once,
  at any moment (:func:`survives_loss`), and
* it bills no more than the baseline when nothing is lost
  (:func:`dry_run_cost`);

otherwise the job runs the baseline, with a risk line saying why.  Limits
that allow no normal-only run leave the HADS map as the only one.

The second test runs the simulated cloud (:mod:`opie.bot.sim.backend`),
whatever backend the job itself runs on: what a map bills is what the
executor makes of it, not the map's own sum.  The executor bills whole
allocation cycles, takes over at run time where the map leaves no room
to, and moves queued work to cheaper idle servers (research note A9), so
either map may run cheaper or dearer than it reads.  All this module asks
of the simulator is the bill of one run of a map without preemption.
"""
import heapq
import math

from opie.bot.hads import fleet as fleet_mod
from opie.bot.hads import job_map
from opie.bot.job import model
from opie.bot.hads import takeover
from opie.bot.sim import backend


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
    """The take-over (:mod:`opie.bot.hads.takeover`) if every preemptible
    server is lost at ``loss``.

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
    """What ``plan`` bills if nothing is lost: the executor run on the
    simulated cloud, without preemption."""
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


def primary_map(job):
    """The HADS map, or the normal-only baseline where that is safer.

    The baseline replaces the map when the normal servers the limits
    allow could not take over from lost preemptible ones and end by D
    (:func:`survives_loss`), or when the map would bill more than the
    baseline even if nothing is lost (the baseline is run only when the
    map bills more than :func:`normal_floor`).
    """
    plan = job_map.hads_map(job)
    if not plan.count(model.PREEMPTIBLE):
        return plan
    safe = job_map.normal_only(plan)
    if not job_map.within_limits(safe):
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
