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

"""A task's whole output, read back from the job's store.

The agent copies each run's output (stdout and stderr) to the store as
the task writes it, in numbered pieces (:class:`opie.bot.agent.LogCopy`),
so ``opie-bot logs`` shows what a running task has written so far as
well as a finished task's complete log, while its result keeps only the
last :data:`opie.bot.agent.OUTPUT_TAIL` bytes.  The log shown is the
committed run's; before a task is committed, its newest run's.

Any task may write the store (its agent's key is on its server), so the
log a result names must be one of that task's own runs
(``logs/<task>/<attempt>-<server>/``), or the command refuses it in one
line; a run named otherwise is never taken for the newest.
"""
import re

from opie.bot import agent
from opie.bot.state import outputs

# '<attempt>-<server>': the attempt numbers a task's runs in order.
RUN = re.compile(r'([0-9]{1,9})-[^/]+')
# Pieces ``--tail`` keeps while it looks for the start of the last
# lines; past them it fetches again what it prints.
KEEP = 8


def run_prefix(store, task_id):
    """The store prefix of the log to show, or None if the task has
    none yet; ValueError (one line) if its result is not one."""
    try:
        result = outputs.read_result(store, task_id)
    except outputs.Unusable as exc:
        raise ValueError(str(exc)) from None
    base = 'logs/%s/' % task_id
    if result and result.get('log') is not None:
        log = result['log']
        if not (isinstance(log, str) and log.startswith(base)
                and log.endswith('/') and RUN.fullmatch(log[len(base):-1])):
            raise ValueError('results/%s.json: its log %r is not one of '
                             'the task\'s runs' % (task_id, log))
        return log
    runs = [RUN.fullmatch(key[len(base):].split('/')[0])
            for key in store.list(base)]
    runs = {m.group(0): int(m.group(1)) for m in runs if m}
    if not runs:
        return None
    newest = max(runs, key=lambda run: (runs[run], run))
    return '%s%s/' % (base, newest)


def pieces(store, prefix, tail=None):
    """The log's bytes, piece by piece; only its last ``tail`` lines if
    given (read from the end, so a long log's start is never fetched,
    and at most :data:`KEEP` pieces are held however long its last
    lines are)."""
    keys = store.list(prefix)
    if tail is None:
        for key in keys:
            yield _piece(store, key)
        return
    if tail == 0:
        return
    # From the end: the piece where the last ``tail`` lines start (a
    # newline ending the log ends its last line, it starts none).
    held, newlines, start, cut = {}, 0, 0, 0
    for i in range(len(keys) - 1, -1, -1):
        data = _piece(store, keys[i])
        if len(held) < KEEP:
            held[i] = data
        end = len(data)
        if i == len(keys) - 1 and data.endswith(b'\n'):
            end -= 1
        at = _start_of_last(data, end, tail - newlines)
        if at is not None:
            start, cut = i, at
            break
        newlines += data.count(b'\n', 0, end)
    for i in range(start, len(keys)):
        data = held.pop(i) if i in held else _piece(store, keys[i])
        yield data[cut:] if i == start else data


def _piece(store, key):
    """One piece of a log (ValueError if larger than the agent writes
    them, :data:`agent.LOG_CHUNK`)."""
    return store.get(key, agent.LOG_CHUNK) or b''


def _start_of_last(data, end, lines):
    """Where the last ``lines`` lines of ``data[:end]`` start, or None
    if it holds fewer newlines than that."""
    for _ in range(lines):
        end = data.rfind(b'\n', 0, end)
        if end < 0:
            return None
    return end + 1
