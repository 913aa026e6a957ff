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

"""A finished task's outputs, from the job's store into the data directory.

The agent uploads the files matching a task's ``outputs`` patterns under
its run's own prefix and lists them in the task's committed result, so
exactly the committed run's files come back, into
``DATA_DIR/<job id>/outputs/<task>/`` (:mod:`opie.bot.state.datadir`).  A name
the task chose never leads outside that directory or through a link
(:func:`opie.bot.state.paths.write_below`); such a task's outputs are refused,
journalled, and left in the store, and the job goes on.

Each task's fetch is journalled after its files are written
(``outputs_fetched``): a client killed in between fetches them again on
``resume``, writing the same files over themselves.  ``opie-bot
outputs`` fetches every committed task's again (:func:`fetch_task`),
journalling nothing: how a tenant whose job ran on a controller gets
them, and how a refused fetch is tried again.

The store is within reach of every task (its agent's key, or the shared
file system), so a result is checked before anything is read: only a
task of the job (a name :data:`jobfile.TASK_ID` allows: never ``..``),
only objects below that task's own ``outputs/<task>/`` prefix, only the
names an agent writes; anything else is refused (:class:`Unusable`) as
a link is, and so is a result over :data:`agent.SMALL_OBJECT` bytes or
an output over :data:`agent.MAX_FILE` (read no further than that).  A
fetch first removes the temporary files a killed fetch left in the
task's directory (:func:`paths.remove_temporaries`).
"""
import json
import os

from opie.bot import agent
from opie.bot.state import datadir
from opie.bot.hads import interfaces
from opie.bot.job import jobfile
from opie.bot.state import paths


class Missing(Exception):
    """An output the result lists is not in the store."""


class Unusable(Missing):
    """A result that is not what an agent writes (corrupt, or forged by
    a task with the store's key): nothing of it is fetched."""


# What refuses a task's outputs: the job goes on without them.
REFUSED = (paths.PathError, Missing)


def fetch(store, result, data_dir, below):
    """Write the outputs of a committed ``result`` to ``data_dir/below``;
    (files written, files the agent skipped)."""
    spec = result.get('outputs') or {}
    files = spec.get('files', ())
    paths.remove_temporaries(os.path.join(data_dir, *below.split('/')))
    for rel in files:
        try:
            parts = agent.relative_path(rel).split('/')
        except ValueError as exc:
            raise paths.PathError(str(exc)) from None
        try:
            data = store.get(spec['prefix'] + rel, agent.MAX_FILE)
        except ValueError as exc:   # too large, a link, a FIFO
            raise Unusable(str(exc)) from None
        if data is None:
            raise Missing('%s is not in the store' % rel)
        paths.write_below(data_dir, below.split('/') + parts, data)
    return len(files), len(spec.get('skipped', ()))


def fetch_task(store, data_dir, job_id, task_id):
    """Fetch the outputs of the committed run of ``task_id``; (files
    written, files the agent skipped), or None if it committed nothing
    (a run failed for hanging)."""
    if not isinstance(task_id, str) or not jobfile.TASK_ID.fullmatch(
            task_id):
        raise paths.PathError('task id %r names no directory' % (task_id,))
    result = read_result(store, task_id)
    if result is None:
        return None
    check(result, task_id)
    return fetch(store, result, data_dir, datadir.outputs(job_id, task_id))


def read_result(store, task_id):
    """The committed result of ``task_id`` (a dict), None if there is
    none, else :class:`Unusable`."""
    key = 'results/%s.json' % task_id
    try:
        data = store.get(key, agent.SMALL_OBJECT)
        if data is None:
            return None
        result = json.loads(data)
    except ValueError as exc:     # not JSON, not UTF-8, too large, a link
        raise Unusable('%s is not a result: %s' % (key, exc)) from None
    if not isinstance(result, dict):
        raise Unusable('%s is not a result' % key)
    return result


def check(result, task_id):
    """The ``outputs`` of ``result`` name only objects of the task's
    own prefix, by the names an agent gives them; else
    :class:`Unusable`."""
    spec = result.get('outputs')
    if spec is None:
        return
    why = _wrong(spec, task_id)
    if why:
        raise Unusable('results/%s.json: its outputs %s' % (task_id, why))


def _wrong(spec, task_id):
    if not isinstance(spec, dict):
        return 'are not a list of files'
    prefix, files = spec.get('prefix'), spec.get('files', [])
    own = 'outputs/%s/' % task_id
    if not isinstance(prefix, str) or not prefix.startswith(own) or \
            not prefix.endswith('/') or not _clean(prefix[len(own):-1]):
        return 'are not below %s' % own
    if not isinstance(files, list) or not all(
            isinstance(f, str) and _clean(f) for f in files):
        return 'are not a list of files below %s' % own
    if not isinstance(spec.get('skipped', {}), (dict, list)):
        return 'skipped are not a list of files'
    return None


def _clean(rel):
    """``rel`` is a path below its directory, as the agent writes one."""
    try:
        return agent.relative_path(rel) == rel
    except ValueError:
        return False


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
        """A runner's task event: a task that ended is fetched on the
        next :meth:`run` (one that stopped has nothing to fetch)."""
        if event.kind == interfaces.FINISHED:
            self.pending.add(event.task_id)

    def run(self):
        for task_id in sorted(self.pending):
            self._fetch(task_id)
            self.pending.discard(task_id)

    def _fetch(self, task_id):
        record = {'t': self.clock.now(), 'task': task_id}
        try:
            got = fetch_task(self.store, self.data_dir, self.job_id, task_id)
        except REFUSED as exc:
            record.update(event='outputs_refused', reason=str(exc))
        else:
            if got is None:
                return
            record.update(event='outputs_fetched', files=got[0],
                          skipped=got[1])
        self.journal.append(record)
