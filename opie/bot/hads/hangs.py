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

"""Hung tasks: a run that outlives its estimate by far is lost.

On a real cloud a task can hang (a deadlock, a stalled mount, a server
that stopped without Nova noticing) and would then hold its server, and
the job, until the client's horizon: ten deadlines of billing.  A run is
hung once it has run ``policy.hang_factor`` times its estimated wall time
(checkpoint overhead included), measured from its start; a hibernated
server's runs are frozen, not hung, and are looked at again later.  The
executor then deletes the server (a hang may be the server's fault) and
runs the task elsewhere from its latest checkpoint, at most
``policy.hang_retries`` more times; after that the task ends as failed,
so the job can end.  Only the cloud backend watches: the simulated cloud
has no hangs, and its runs must stay exactly as HADS plans them.
"""
import collections

from opie.bot.hads import fleet as fleet_mod


class Hangs:
    def __init__(self, executor):
        self.executor = executor
        self.factor = executor.job.policy.hang_factor
        self.retries = executor.job.policy.hang_retries
        self.count = collections.Counter()   # task -> hangs so far

    def watch(self, server, task_id):
        """Look at ``task_id``'s run on ``server`` once it is overdue."""
        running = server.running[task_id]
        self._arm(running.started, server, task_id, running)

    def _arm(self, since, server, task_id, running):
        self.executor.clock.call_at(
            since + self.factor * running.run.wall_s, self._check, server,
            task_id, running)

    def _check(self, server, task_id, running):
        if server.state == fleet_mod.GONE or \
                server.running.get(task_id) is not running:
            return      # ended, moved or lost: nothing hangs
        if server.state == fleet_mod.HIBERNATED:
            self._arm(self.executor.now(), server, task_id, running)
            return
        self.count[task_id] += 1
        self.executor.hung(server, task_id,
                           failed=self.count[task_id] > self.retries)
