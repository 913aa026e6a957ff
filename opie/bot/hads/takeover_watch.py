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

"""The take-over watch: when the job must go to normal servers alone.

:mod:`opie.bot.hads.takeover` maps the job onto normal servers within its
limits; this module decides, event after event, whether the job may still
wait on preemptible servers.  It holds a map and its hand-over time, the
latest start that still ends by D (:meth:`TakeOver.latest_start`), and
wakes the executor then; it maps again only when that time comes or when
there is no map, since nothing else makes a held map end later:

* a task that ends, a checkpoint read or a server lost leaves the map's
  servers and queue orders as good as they were (a list schedule in a
  fixed order never ends later on shorter or fewer tasks);
* the two writes that could make it late ask first: starting a task on a
  normal server (:meth:`Watch.may_start`) and deleting an idle one the
  map uses (:meth:`Watch.may_give_up`).

If no map can end by D any more, the watch says so once (the executor
journals ``take_over_lost``, with the limits that bound) and maps again
only now and then, while HADS carries on alone.

The watch decides and never acts: it creates, deletes, starts and kills
nothing.  A :class:`Verdict` tells the executor (:mod:`opie.bot.hads.executor`)
what to do.  The watch reads the job from the fleet (servers, done and
stranded tasks) and owns only the map, its timer and the bookkeeping that
keeps mapping rare.
"""
import dataclasses
import typing

from opie.bot.hads import fleet as fleet_mod
from opie.bot.hads import takeover

# While no map can end by D, the job is mapped again each time this
# fraction of the tasks left has ended (1/32), or each task near the end.
HOPELESS_STEP = 32


@dataclasses.dataclass
class Verdict:
    """What the executor must do after :meth:`Watch.review`."""
    # Hand the job over to this map now.
    hand_over: typing.Optional[takeover.TakeOver] = None
    # Start what :meth:`Watch.may_start` held back for a hand-over that
    # is not coming.
    release: bool = False
    # No map ends by D any more, said once: this is the one found.
    lost: typing.Optional[takeover.TakeOver] = None


class Watch:
    def __init__(self, fleet, clock, wake):
        """``wake`` is called at the hand-over time of the map held; the
        caller then asks for :meth:`review`."""
        self.fleet = fleet
        self.clock = clock
        self.deadline = fleet.job.deadline_s
        self.alpha = fleet.job.policy.alpha_s
        self._wake = wake
        self.taken_over = False
        # A start was held back: hand the job over at the end of the event.
        self.due = False
        self._map = None
        self._latest = None     # the held map's hand-over time
        self._timer = None
        self._hopeless = False
        self._hopeless_left = 0
        self._ends = {}     # normal server id -> (version, when, its end)

    def at_risk(self):
        """The tasks the take-over maps: unfinished and not running on a
        normal server."""
        fixed = {t for s in self.fleet.live() if not s.spot
                 for t in s.running}
        return [t for t in self.fleet.tasks
                if t not in self.fleet.done and t not in fixed]

    def map_now(self, previous=None, without=None):
        """The take-over of the tasks at risk, from now."""
        return takeover.map_tasks(self.fleet, self.clock.now(),
                                  self.at_risk(), without=without,
                                  previous=previous)

    def stale(self, progress=False):
        """Whether to :meth:`review` after an event (``progress``: a task
        ended): when the held map's hand-over time has come, or there is
        none; if no map could end by D, once another 1/:data:`HOPELESS_STEP`
        of the tasks left has ended (mapping after every task would make a
        long job that cannot meet D quadratic)."""
        if self.taken_over:
            return False
        if self._hopeless:
            left = len(self.fleet.tasks) - len(self.fleet.done)
            return progress and left <= self._hopeless_left - max(
                1, self._hopeless_left // HOPELESS_STEP)
        return (self._map is None or self.due
                or self._latest <= self.clock.now())

    def review(self):
        """Map the tasks at risk again; the verdict says whether it is
        time to hand the job over."""
        if self.taken_over:
            return Verdict()
        due, self.due = self.due, False
        if not self._exposed():
            self.forget()
            return Verdict(release=due)
        mapped = self.map_now(previous=self._map)
        if mapped.finish > self.deadline:
            # No hand-over can save D any more: HADS carries on alone.
            lost = None if self._hopeless else mapped
            self._hopeless = True
            self._hopeless_left = len(self.fleet.tasks) - len(self.fleet.done)
            self.forget()
            return Verdict(release=due, lost=lost)
        if due or (mapped.latest_start(self.deadline)
                   < self.clock.now() + takeover.PRECISION_S):
            self.forget()
            return Verdict(hand_over=mapped)
        self._hopeless = False
        self._hold(mapped)
        return Verdict()

    def handed_over(self):
        """The job runs on normal servers only from now: nothing to
        watch any more."""
        self.taken_over = True
        self.forget()

    def forget(self):
        """Drop the map held, and its timer."""
        self._hold(None)

    def may_start(self, server, task_id):
        """Whether starting ``task_id`` on normal ``server`` leaves the
        take-over able to end by D.

        A task started on a normal server stays there, so the take-over
        loses the choice of where it runs.  On a server the map uses, the
        run holds one slot for its length, which delays the map's queue
        there by no more: the hand-over time moves that much earlier.
        Elsewhere, or when that would be now, the job is mapped with the
        task fixed there; if that map cannot end by D either, the job is
        handed over at the end of the event instead (:attr:`due`), with
        the task still free to go where the take-over puts it.
        """
        if self.taken_over or self._hopeless:
            return True
        if self.due:
            return False
        if not self._exposed():
            return True
        now = self.clock.now()
        run = self.fleet.run_for(task_id, server.flavor, server.market)
        if self._in_map(server) and self._latest - run.wall_s > now:
            self._hold(self._map, self._latest - run.wall_s)
            return True
        # Mapped as if it ran there already, which takes it off the tasks
        # at risk too.
        server.running[task_id] = fleet_mod.Running(run, now)
        try:
            mapped = self.map_now(previous=self._map)
        finally:
            del server.running[task_id]
        if mapped.latest_start(self.deadline) > now:
            self._hold(mapped)
            return True
        self.due = True
        return False

    def may_give_up(self, server):
        """Whether the take-over still ends by D without idle ``server``.

        In the map, a new server of the same flavor may take its place
        after a boot, which delays the map by at most alpha: if the
        hand-over time allows that, it moves earlier by alpha; otherwise
        the job is mapped without the server.
        """
        if (self.taken_over or self._hopeless or not self._in_map(server)
                or not self._exposed()):
            return True
        if self._latest - self.alpha > self.clock.now():
            for target in self._map.targets:
                if target.server is server:
                    target.server = None
            self._hold(self._map, self._latest - self.alpha)
            return True
        mapped = self.map_now(previous=self._map, without=server)
        if mapped.latest_start(self.deadline) > self.clock.now():
            self._hold(mapped)
            return True
        return False

    def _exposed(self):
        """Whether D may still be missed: a task is on a preemptible
        server or stranded, or the normal servers' queues end past D."""
        if self.fleet.stranded:
            return True
        now = self.clock.now()
        for server in self.fleet.live():
            if server.spot:
                if server.queue():
                    return True
            elif self._normal_end(server, now) > self.deadline:
                return True
        return False

    def _normal_end(self, server, now):
        """When normal ``server``'s queue ends, or a later time that is
        still before D: waiting moves the end of an unchanged queue by no
        more than the wait, so the queue is projected again only when
        the last projection, moved on by the time since, would pass D.
        """
        known = self._ends.get(server.id)
        if known is not None and known[0] == server.version:
            bound = known[2] + (now - known[1])
            if bound <= self.deadline:
                return bound
        finish = self.fleet.projection(server, now)[0].finish
        self._ends[server.id] = (server.version, now, finish)
        return finish

    def _hold(self, mapped, latest=None):
        """Hold ``mapped`` and wake up at its hand-over time (or at the
        earlier ``latest``)."""
        if self._timer is not None:
            self.clock.cancel(self._timer)
            self._timer = None
        self._map = mapped
        if mapped is None:
            return
        self._latest = (mapped.latest_start(self.deadline) if latest is None
                        else latest)
        self._timer = self.clock.call_at(self._latest, self._woken)

    def _woken(self):
        self._timer = None
        self._wake()

    def _in_map(self, server):
        return self._map is not None and any(
            t.server is server for t in self._map.targets)
