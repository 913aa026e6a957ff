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

"""Preemption sources: the HADS emulator and trace replay.

The emulator is HEM of the HADS paper (section 5.2.1): every preemptible
flavor has its own process; the time to the next hibernation is
exponential with rate ``lambda_h = kh / D`` and, once hibernated, the time
to resume exponential with rate ``lambda_r = kr / D`` (``kr = 0``: never).
An event hits every live server of the flavor at once.  In ``terminate``
mode (OPIE's, which deletes preempted servers) the same process kills the
servers instead and nothing ever resumes.  Each flavor draws from its own
stream seeded with the run's seed and the flavor name, so adding a flavor
to a job does not shift the others' events.

A trace is a CSV file with a header ``time_s,flavor,event`` and events
``hibernate``, ``resume`` or ``terminate``.

With a notice of N seconds (OPIE issue 26), an event's time is when the
cloud decides to preempt: every live server of the flavor is told then
(:meth:`SimCloud.notify`) and hibernated or terminated N seconds later.
A notice is the same warning in both modes.  The emulator draws a resume
(hibernate mode) or the next decision (terminate mode) from the
preemption itself, so a notice delays every later event too; a trace's
resumes keep their times.  With no notice (0) decision and preemption
are one, as in HEM.
"""
import csv
import dataclasses
import io
import math
import random

from opie.bot.job import files

HIBERNATE = 'hibernate'
TERMINATE = 'terminate'
RESUME = 'resume'
MODES = (HIBERNATE, TERMINATE)
MAX_TRACE_BYTES = 64 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class TraceEvent:
    time_s: float
    flavor: str
    event: str


class _Counting:
    """Counts flavor-level events that hit at least one server."""

    def __init__(self, clock, cloud, notice_s=0.0):
        self.clock = clock
        self.cloud = cloud
        self.notice_s = notice_s
        self.events = []

    def _decide(self, flavor, event, then=None):
        """Preempt ``flavor`` (``event``) after the notice, then call
        ``then(flavor)``; a resume needs no notice."""
        if self.notice_s > 0 and event != RESUME:
            at = self.clock.now() + self.notice_s
            self.cloud.notify(flavor, at)
            self.clock.call_at(at, self._preempt_now, flavor, event, then)
        else:
            self._preempt_now(flavor, event, then)

    def _preempt_now(self, flavor, event, then):
        self._apply(flavor, event)
        if then is not None:
            then(flavor)

    def _apply(self, flavor, event):
        action = {HIBERNATE: self.cloud.hibernate,
                  RESUME: self.cloud.resume,
                  TERMINATE: self.cloud.terminate}[event]
        hit = action(flavor)
        if hit:
            self.events.append({'t': self.clock.now(), 'flavor': flavor,
                                'event': event, 'servers': hit})


class PoissonPreemptions(_Counting):
    def __init__(self, clock, cloud, flavors, kh, kr, deadline_s, seed,
                 mode=HIBERNATE, notice_s=0.0):
        super().__init__(clock, cloud, notice_s)
        if mode not in MODES:
            raise ValueError('mode must be one of %s' % ', '.join(MODES))
        self.rate_h = kh / deadline_s
        self.rate_r = kr / deadline_s
        self.mode = mode
        self._rng = {name: random.Random('%s/%s' % (seed, name))
                     for name in sorted(flavors)}

    def start(self):
        for name in self._rng:
            self._next_preemption(name)

    def _after(self, name, rate, callback):
        if rate > 0:
            delay = self._rng[name].expovariate(rate)
            self.clock.call_at(self.clock.now() + delay, callback, name)

    def _next_preemption(self, name):
        self._after(name, self.rate_h, self._preempt)

    def _preempt(self, name):
        self._decide(name, self.mode, self._preempted)

    def _preempted(self, name):
        if self.mode == TERMINATE:
            self._next_preemption(name)
        else:
            self._after(name, self.rate_r, self._resume)

    def _resume(self, name):
        self._apply(name, RESUME)
        self._next_preemption(name)


class TraceReplay(_Counting):
    def __init__(self, clock, cloud, events, notice_s=0.0):
        super().__init__(clock, cloud, notice_s)
        self.trace = sorted(events, key=lambda e: e.time_s)

    def start(self):
        for e in self.trace:
            self.clock.call_at(e.time_s, self._decide, e.flavor, e.event)


class TraceError(ValueError):
    pass


def read_trace(path, flavors):
    """Parse a trace CSV; errors name the line."""
    events = []
    try:
        rows = list(csv.DictReader(io.StringIO(
            files.read_text(path, MAX_TRACE_BYTES), newline='')))
    except files.ReadError as exc:
        raise TraceError('%s: %s' % (path, exc)) from None
    except csv.Error as exc:
        raise TraceError('%s: not CSV: %s' % (path, exc)) from None
    for line, row in enumerate(rows, 2):
        try:
            time_s = float(row['time_s'])
            flavor, event = row['flavor'], row['event']
        except (KeyError, TypeError, ValueError):
            raise TraceError('%s:%d: need time_s,flavor,event'
                             % (path, line)) from None
        if flavor not in flavors:
            raise TraceError('%s:%d: no flavor %r in the job'
                             % (path, line, flavor))
        if event not in (HIBERNATE, RESUME, TERMINATE) or \
                not 0 <= time_s < math.inf:
            raise TraceError('%s:%d: bad event %r at %s'
                             % (path, line, event, time_s))
        events.append(TraceEvent(time_s, flavor, event))
    return events
