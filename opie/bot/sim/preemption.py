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
"""
import csv
import dataclasses
import io
import math
import random

from opie.bot import files

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

    def __init__(self, clock, cloud):
        self.clock = clock
        self.cloud = cloud
        self.events = []

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
                 mode=HIBERNATE):
        super().__init__(clock, cloud)
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
        self._apply(name, self.mode)
        if self.mode == TERMINATE:
            self._next_preemption(name)
        else:
            self._after(name, self.rate_r, self._resume)

    def _resume(self, name):
        self._apply(name, RESUME)
        self._next_preemption(name)


class TraceReplay(_Counting):
    def __init__(self, clock, cloud, events):
        super().__init__(clock, cloud)
        self.trace = sorted(events, key=lambda e: e.time_s)

    def start(self):
        for e in self.trace:
            self.clock.call_at(e.time_s, self._apply, e.flavor, e.event)


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
