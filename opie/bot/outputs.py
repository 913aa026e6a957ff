"""A finished task's outputs, from the job's store into the data directory.

The agent uploads the files matching a task's ``outputs`` patterns under
its run's own prefix and lists them in the task's committed result, so
exactly the committed run's files come back, into
``DATA_DIR/<job id>/outputs/<task>/`` (:mod:`opie.bot.datadir`).  A name
the task chose never leads outside that directory or through a link
(:func:`opie.bot.paths.write_below`); such a task's outputs are refused,
journalled, and left in the store, and the job goes on.

Each task's fetch is journalled after its files are written
(``outputs_fetched``): a client killed in between fetches them again on
``resume``, writing the same files over themselves.  ``opie-bot
outputs`` fetches every committed task's again (:func:`fetch_task`),
journalling nothing: how a tenant whose job ran on a controller gets
them, and how a refused fetch is tried again.
"""
from opie.bot import agent
from opie.bot import datadir
from opie.bot import paths


class Missing(Exception):
    """An output the result lists is not in the store."""


def fetch(store, result, data_dir, below):
    """Write the outputs of a committed ``result`` to ``data_dir/below``;
    (files written, files the agent skipped)."""
    spec = result.get('outputs') or {}
    files = spec.get('files', ())
    for rel in files:
        try:
            parts = agent.relative_path(rel).split('/')
        except ValueError as exc:
            raise paths.PathError(str(exc)) from None
        data = store.get(spec['prefix'] + rel)
        if data is None:
            raise Missing('%s is not in the store' % rel)
        paths.write_below(data_dir, below.split('/') + parts, data)
    return len(files), len(spec.get('skipped', ()))


def fetch_task(store, data_dir, job_id, task_id):
    """Fetch the outputs of the committed run of ``task_id``; (files
    written, files the agent skipped), or None if it committed nothing
    (a run failed for hanging)."""
    result = agent.read_json(store, 'results/%s.json' % task_id)
    if result is None:
        return None
    return fetch(store, result, data_dir, datadir.outputs(job_id, task_id))


class Fetcher:
    """Fetch the outputs of every task that ends, once, journalled."""

    def __init__(self, store, journal, clock, data_dir, job_id):
        self.store = store
        self.journal = journal
        self.clock = clock
        self.data_dir = data_dir
        self.job_id = job_id
        self.pending = set()

    def ended(self, event):
        """A runner's task event: fetch on the next :meth:`run`."""
        self.pending.add(event.task_id)

    def run(self):
        for task_id in sorted(self.pending):
            self._fetch(task_id)
            self.pending.discard(task_id)

    def _fetch(self, task_id):
        record = {'t': self.clock.now(), 'task': task_id}
        try:
            got = fetch_task(self.store, self.data_dir, self.job_id, task_id)
        except (paths.PathError, Missing) as exc:
            record.update(event='outputs_refused', reason=str(exc))
        else:
            if got is None:
                return
            record.update(event='outputs_fetched', files=got[0],
                          skipped=got[1])
        self.journal.append(record)
