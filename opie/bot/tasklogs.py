"""A task's whole output, read back from the job's store.

The agent copies each run's output (stdout and stderr) to the store as
the task writes it, in numbered pieces (:class:`opie.bot.agent.LogCopy`),
so ``opie-bot logs`` shows what a running task has written so far as
well as a finished task's complete log, while its result keeps only the
last :data:`opie.bot.agent.OUTPUT_TAIL` bytes.  The log shown is the
committed run's; before a task is committed, its newest run's.
"""
from opie.bot import agent


def run_prefix(store, task_id):
    """The store prefix of the log to show, or None if the task has
    none yet."""
    result = agent.read_json(store, 'results/%s.json' % task_id)
    if result and result.get('log'):
        return result['log']
    base = 'logs/%s/' % task_id
    runs = {key[len(base):].split('/')[0] for key in store.list(base)}
    if not runs:
        return None
    # '<attempt>-<server>': the attempt numbers a task's runs in order.
    newest = max(runs, key=lambda run: int(run.split('-', 1)[0]))
    return '%s%s/' % (base, newest)


def pieces(store, prefix, tail=None):
    """The log's bytes, piece by piece; only its last ``tail`` lines if
    given (read from the end, so a long log's start is never fetched)."""
    keys = store.list(prefix)
    if tail is None:
        for key in keys:
            yield store.get(key) or b''
        return
    buf = b''
    for key in reversed(keys):
        if buf.count(b'\n') > tail:
            break
        buf = (store.get(key) or b'') + buf
    lines = buf.splitlines(keepends=True)
    yield b''.join(lines[len(lines) - tail:] if tail else ())
