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

"""Projected schedule of one server: when each of its slots frees up.

Both the map builder (Alg. 2-3, :mod:`opie.bot.hads.job_map`) and the executor
(Alg. 4-8) ask the same two questions of a server: when would a
task appended to its queue finish (its EFT), and which is the longest task
it holds (the spare time of Alg. 7).  Tasks run in queue order on the
first free slot, so the answer is a list schedule kept as a heap of slot
free times.
"""
import heapq


class Projection:
    __slots__ = ('_free', '_finish', 'longest')

    def __init__(self, free_times, longest=0.0):
        self._free = list(free_times)
        heapq.heapify(self._free)
        self._finish = max(self._free)
        self.longest = longest

    def copy(self):
        twin = Projection.__new__(Projection)
        twin._free = list(self._free)
        twin._finish = self._finish
        twin.longest = self.longest
        return twin

    @property
    def next_start(self):
        return self._free[0]

    @property
    def finish(self):
        return self._finish

    def eft_with(self, wall):
        return max(self._finish, self._free[0] + wall)

    def add(self, wall, runtime=0.0):
        """Append a task; return its expected start."""
        start = self._free[0]
        end = start + wall
        heapq.heapreplace(self._free, end)
        if end > self._finish:
            self._finish = end
        if runtime > self.longest:
            self.longest = runtime
        return start
