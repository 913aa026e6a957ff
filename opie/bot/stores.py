"""In-memory CheckpointStore and StateStore.

Enough for the simulated cloud and for tests; a run against a real cloud
wants stores that outlive the client.
"""
from opie.bot import interfaces


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
