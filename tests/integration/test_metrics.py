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

"""The schedulers' Prometheus textfiles, one per worker (issue 13 point 6).

The lab sets ``[opie] metrics_dir``: every worker of both opie-scheduler
services writes its own ``opie-scheduler.<host>.<worker>.prom`` there, as
node_exporter's textfile collector would read them, its samples labelled
with that host and worker slot (issue 27: no pid, so no new series when a
worker restarts). The workers Nova forks for one service take slots 0 to
``[scheduler] workers`` - 1. That the counters move with a preemption is
``test_one_preemption``'s to check.
"""
from opie.lab import settings
from opie.testing import lab


def test_each_forked_worker_has_its_own_slot():
    expected = {str(slot) for slot in range(settings.SCHEDULER_WORKERS)}

    def slotted():
        slots = {}
        for host, worker in lab.read_metrics()[1]:
            slots.setdefault(host, set()).add(worker)
        return (len(slots) == settings.SCHEDULERS
                and all(found == expected for found in slots.values()))
    # A worker writes at start and every heartbeat, and removes the files
    # of slots no worker holds.
    lab.wait_for('a file per slot of each scheduler service', slotted)
