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

"""A simulated clock: a heap of timers run in time order."""
import heapq
import itertools

from opie.bot.hads import interfaces


class Timer:
    __slots__ = ('when', 'callback', 'args', 'live')

    def __init__(self, when, callback, args):
        self.when = when
        self.callback = callback
        self.args = args
        self.live = True


class SimClock(interfaces.Clock):
    def __init__(self):
        self._now = 0.0
        self._heap = []
        self._seq = itertools.count()
        self._stopped = False

    def now(self):
        return self._now

    def call_at(self, when, callback, *args):
        timer = Timer(max(when, self._now), callback, args)
        heapq.heappush(self._heap, (timer.when, next(self._seq), timer))
        return timer

    def cancel(self, handle):
        handle.live = False

    def stop(self):
        self._stopped = True

    def run(self, until):
        """Run timers until stopped, out of timers, or past ``until``."""
        self._stopped = False
        while self._heap and not self._stopped:
            when, _, timer = self._heap[0]
            if when > until:
                break
            heapq.heappop(self._heap)
            if timer.live:
                timer.live = False
                self._now = when
                timer.callback(*timer.args)
