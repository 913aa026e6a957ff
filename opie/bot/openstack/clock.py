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

"""The Clock port in real time, optionally compressed.

Job time is ``(wall time - t0) * speed`` seconds: ``speed`` 1 on a real
cloud, more in the demo so a half-hour job runs in a minute.  ``t0`` is
wall-clock time (epoch seconds), kept in the journal, so a resumed client
counts from the same origin and sees the time it was away.
"""
import heapq
import itertools
import time

from opie.bot.hads import interfaces


class RealClock(interfaces.Clock):
    def __init__(self, t0, speed=1.0):
        self.t0 = t0
        self.speed = speed
        self._heap = []
        self._seq = itertools.count()

    def now(self):
        return self.job_time(time.time())

    def job_time(self, wall):
        """Job time at wall-clock time ``wall`` (epoch seconds)."""
        return (wall - self.t0) * self.speed

    def call_at(self, when, callback, *args):
        handle = [when, next(self._seq), callback, args, True]
        heapq.heappush(self._heap, handle)
        return handle

    def cancel(self, handle):
        handle[4] = False

    def run_due(self):
        """Run every live timer whose time has come, in time order."""
        while self._heap and self._heap[0][0] <= self.now():
            _, _, callback, args, live = heapq.heappop(self._heap)
            if live:
                callback(*args)

    def wall_s(self, job_s):
        return job_s / self.speed
