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

"""In-memory CheckpointStore and StateStore.

Enough for the simulated cloud and for tests; a run against a real cloud
wants stores that outlive the client.
"""
from opie.bot.hads import interfaces


class MemoryCheckpointStore(interfaces.CheckpointStore):
    def __init__(self):
        self._latest = {}
        self.taken = 0

    def put(self, checkpoint):
        self._latest[checkpoint.task_id] = checkpoint
        self.taken += 1

    def latest(self, task_id):
        return self._latest.get(task_id)


class MemoryStateStore(interfaces.StateStore):
    def __init__(self):
        self._records = []

    def append(self, record):
        self._records.append(record)

    def records(self):
        return list(self._records)
