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

"""Where a task goes: HADS Alg. 4, 6, 7 and 8, and Eq. 4, as pure decisions.

``keeps_spare`` is Alg. 7's spare-time rule, the one place it is written:
a preemptible server whose queue ends at ``eft`` must still leave time
before D to re-run its longest task elsewhere after a last-minute
preemption (``D - eft > e_m + alpha``; e_m counts the re-run on the
fastest flavor a normal server may use, when that is slower, see
:meth:`opie.bot.hads.fleet.Fleet.spare`).  ``check`` applies it to a task
joining a server; the executor applies it again when a resumed server's
queue moved later.  A normal server is never preempted, so there the task
only has to end before D (research note A8).

``estimate_rt`` is Alg. 4 on copies: it tries the servers already chosen,
then idle, then busy ones, each by price, then new normal servers, and
returns how long the whole queue would take from now (A7); ``mtt`` is
Eq. 4 on it.  ``target`` is Alg. 6's choice for one task: idle, then busy
servers (preemptible first, then by price), then the cheapest new normal
server that ends the task before D.  ``stealable`` is Alg. 8's candidate
set: queued tasks that would otherwise start after their server's current
allocation cycle (A9: the paper's "start", not the code's "end"); a normal
thief steals only from normal servers, since moving work from a cheap
server to a dear one saves nothing.

Nothing here changes a server or talks to the cloud: the executor
(:mod:`opie.bot.hads.executor`) asks, then acts.
"""
import bisect
import dataclasses
import math
import typing

from opie.bot.hads import fleet as fleet_mod
from opie.bot.job import model

IDLE = 'idle'
BUSY = 'busy'
NEW = 'new'


@dataclasses.dataclass
class Choice:
    kind: str                     # idle, busy, new, or None: nothing fits
    server: typing.Any = None     # fleet.Server for idle and busy
    flavor: typing.Any = None     # model.Flavor for new
    limits: typing.Tuple[str, ...] = ()   # which limits stopped a new one


def full_limits(job, used, names):
    """Names of the normal limits that ``used`` (normal servers per flavor
    name) fills, for the flavors ``names`` and ``max_normal``; the journal
    and the report name limits this way."""
    full = ['normal limit of %s (%d)' % (name, job.flavors[name].limits[
        model.NORMAL]) for name in names
        if used.get(name, 0) >= job.flavors[name].limits[model.NORMAL]]
    if sum(used.values()) >= job.policy.max_normal:
        full.append('max_normal (%d)' % job.policy.max_normal)
    return tuple(full)


class Assigner:
    """The decisions above for one job, on its fleet."""

    def __init__(self, job, fleet):
        self.job = job
        self.fleet = fleet
        self.deadline = job.deadline_s
        self.alpha = job.policy.alpha_s
        self.normal_flavors = job.normal_by_price()

    def keeps_spare(self, eft, longest):
        """Alg. 7's spare-time rule for a preemptible server whose queue
        ends at ``eft``: lost just before that, its longest task (e_m,
        ``longest``, each task counted by :meth:`Fleet.spare`) can still
        re-run on a new normal server, after a boot, by D."""
        return self.deadline - eft > longest + self.alpha

    def check(self, task_id, flavor, market, proj):
        """Alg. 7 for ``task_id`` joining the queue ``proj`` projects;
        returns the task's wall time there, or None."""
        if self.fleet.tasks[task_id].memory_mb > flavor.ram_mb:
            return None
        wall = self.fleet.wall(task_id, flavor, market)
        eft = proj.eft_with(wall)
        if market == model.NORMAL:
            return wall if eft < self.deadline else None
        longest = max(proj.longest, self.fleet.spare(task_id, flavor))
        return wall if self.keeps_spare(eft, longest) else None

    def fits(self, task_id, server, now):
        proj, _ = self.fleet.projection(server, now)
        return self.check(task_id, server.flavor, server.market, proj)

    def limits_hit(self, flavor, extra=None):
        """Names of the normal limits that forbid one more ``flavor``."""
        used = self.fleet.normal_counts()
        used.update(extra or {})
        return full_limits(self.job, used, [flavor.name])

    def candidates(self, exclude):
        """Idle and busy servers in Alg. 6 order, as two sorted lists;
        a server with a notice takes nothing: it is about to go."""
        idle, busy = [], []
        for s in self.fleet.servers.values():
            if s is exclude or s.notice_at is not None:
                continue
            if s.state == fleet_mod.IDLE:
                idle.append(s)
            elif s.state in (fleet_mod.BUSY, fleet_mod.BOOTING):
                busy.append(s)
        idle.sort(key=fleet_mod.Server.sort_key)
        busy.sort(key=fleet_mod.Server.sort_key)
        return idle, busy

    def target(self, task_id, now, idle, busy):
        """Alg. 6 for one task; ``idle`` and ``busy`` as from candidates."""
        for s in idle:
            if self.fits(task_id, s, now) is not None:
                return Choice(IDLE, server=s)
        for s in busy:
            if self.fits(task_id, s, now) is not None:
                return Choice(BUSY, server=s)
        hit = []
        for flavor in self.normal_flavors:
            limits = self.limits_hit(flavor)
            if limits:
                hit.extend(limits)
                continue
            if self.fleet.tasks[task_id].memory_mb > flavor.ram_mb:
                continue
            wall = self.fleet.wall(task_id, flavor, model.NORMAL)
            if now + self.alpha + wall < self.deadline:
                return Choice(NEW, flavor=flavor)
        return Choice(None, limits=tuple(dict.fromkeys(hit)))

    def late_target(self, task_id, now, servers):
        """A4: nothing meets D, so the earliest finish wins.

        Normal servers come first: a late task cannot afford another
        preemption.
        """
        best = None
        task = self.fleet.tasks[task_id]
        for s in servers:
            if task.memory_mb <= s.flavor.ram_mb:
                proj, _ = self.fleet.projection(s, now)
                eft = proj.eft_with(self.fleet.wall(task_id, s.flavor,
                                                    s.market))
                if best is None or (s.spot, eft) < best[0]:
                    best = ((s.spot, eft), Choice(BUSY, server=s))
        for flavor in self.normal_flavors:
            if self.limits_hit(flavor) or task.memory_mb > flavor.ram_mb:
                continue
            eft = now + self.alpha + self.fleet.wall(task_id, flavor,
                                                     model.NORMAL)
            if best is None or (False, eft) < best[0]:
                best = ((False, eft), Choice(NEW, flavor=flavor))
        return best and best[1]

    def estimate_rt(self, task_ids, now, exclude):
        """Alg. 4: how long re-running ``task_ids`` elsewhere would take."""
        idle, busy = self.candidates(exclude)
        chosen = []          # (price, n, flavor, market, projection)
        extra = {}           # new normal servers per flavor, tentative
        in_k = set()
        for task_id in task_ids:
            placed = False
            pool = [(c[2], c[3], c[4]) for c in chosen]
            pool += [(s.flavor, s.market, s) for s in idle + busy
                     if s.id not in in_k]
            for flavor, market, ref in pool:
                proj = ref
                if isinstance(ref, fleet_mod.Server):
                    proj = self.fleet.projection(ref, now)[0].copy()
                wall = self.check(task_id, flavor, market, proj)
                if wall is None:
                    continue
                proj.add(wall, self.fleet.spare(task_id, flavor))
                if isinstance(ref, fleet_mod.Server):
                    in_k.add(ref.id)
                    bisect.insort(chosen, (ref.price_h, len(in_k), flavor,
                                           market, proj),
                                  key=lambda c: c[:2])
                placed = True
                break
            if not placed:
                placed = self._estimate_new(task_id, now, chosen, extra)
            if not placed:
                return math.inf
        return max((c[4].finish for c in chosen), default=now) - now

    def mtt(self, server, now):
        """Eq. 4 for hibernated ``server``: (mtt, rt), the migration
        trigger time ``D - (rt + alpha)`` and Alg. 4's rt for its queue
        on the other servers (rt infinite, mtt minus infinity, when no
        server can take the queue)."""
        rt = self.estimate_rt(server.queue(), now, exclude=server)
        return self.deadline - (rt + self.alpha), rt

    def _estimate_new(self, task_id, now, chosen, extra):
        for flavor in self.normal_flavors:
            if self.limits_hit(flavor, extra):
                continue
            proj = self.fleet.empty_projection(flavor, now + self.alpha)
            wall = self.check(task_id, flavor, model.NORMAL, proj)
            if wall is None:
                continue
            proj.add(wall, self.fleet.spare(task_id, flavor))
            extra[flavor.name] = extra.get(flavor.name, 0) + 1
            bisect.insort(chosen, (flavor.price_h[model.NORMAL],
                                   -len(chosen) - 1, flavor, model.NORMAL,
                                   proj), key=lambda c: c[:2])
            return True
        return False

    def billed_past_cycles(self, servers, now):
        """What ``servers`` bill past the allocation cycles they have
        paid, their queues as they stand ($ per hour x seconds).

        A server is deleted at the end of the cycle in which its queue
        ends (A10), so each cycle its queue reaches into is billed whole.
        """
        ac = self.job.policy.ac_s
        return sum(s.price_h * (s.ac_end(self.fleet.projection(s, now)[0]
                                         .finish, ac) - s.ac_end(now, ac))
                   for s in servers)

    def stealable(self, thief, now):
        """Alg. 8: (victim, [(task id, its expected end there)]) pairs."""
        ac = self.job.policy.ac_s
        victims = [s for s in self.fleet.in_state(fleet_mod.BUSY,
                                                  fleet_mod.BOOTING)
                   if s is not thief and s.waiting
                   and (thief.spot or not s.spot)]
        victims.sort(key=lambda s: (s.spot, -s.price_h, s.key))
        for victim in victims:
            _, starts = self.fleet.projection(victim, now)
            cycle_end = victim.ac_end(now, ac)
            picked = [(t, start + self.fleet.wall(t, victim.flavor,
                                                  victim.market))
                      for t, start in zip(victim.waiting, starts)
                      if start >= cycle_end]
            if picked:
                yield victim, picked
