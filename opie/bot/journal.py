"""The job's journal in SQLite: a StateStore that outlives the client.

One file per job holds the job's settings (``meta``: the job file, where
its objects live, the wall-clock time of t=0, how fast job time runs) and
every record the scheduler and the backends append, in order.  Each record
is committed before the call that appended it returns, so a client killed
at any point leaves every decision it acted on in the journal, and
``opie-bot resume`` continues from there.

Credentials never come here: the settings name a cloud of clouds.yaml or
say "OS_* variables", and :func:`check_clean` refuses a record that holds
a value the client knows to be secret.
"""
import json
import os
import sqlite3

from opie.bot import ports

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    t REAL NOT NULL,
    event TEXT NOT NULL,
    body TEXT NOT NULL);
"""


class JournalError(Exception):
    """The journal is missing, unreadable or not a job's."""


class SecretLeak(Exception):
    """A record would have stored a secret."""


def path_for(directory, job_id):
    return os.path.join(directory, '%s.sqlite' % job_id)


class Journal(ports.StateStore):
    def __init__(self, path, create=False):
        if not create and not os.path.exists(path):
            raise JournalError('no journal %s' % path)
        if create:
            os.makedirs(os.path.dirname(os.path.abspath(path)),
                        exist_ok=True)
        try:
            self._db = sqlite3.connect(path, isolation_level=None)
            self._db.execute('PRAGMA journal_mode=WAL')
            self._db.execute('PRAGMA synchronous=FULL')
            self._db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise JournalError('%s: %s' % (path, exc)) from None
        self.path = path
        self.secrets = ()

    def close(self):
        self._db.close()

    # -- settings ---------------------------------------------------------

    def set_meta(self, **values):
        with self._db:
            for key, value in values.items():
                self._db.execute(
                    'INSERT OR REPLACE INTO meta VALUES (?, ?)',
                    (key, json.dumps(value)))

    def meta(self):
        try:
            rows = self._db.execute('SELECT key, value FROM meta').fetchall()
        except sqlite3.DatabaseError as exc:
            raise JournalError('%s: %s' % (self.path, exc)) from None
        return {k: json.loads(v) for k, v in rows}

    # -- the port ---------------------------------------------------------

    def append(self, record):
        body = json.dumps(record, sort_keys=True)
        check_clean(body, self.secrets)
        self._db.execute(
            'INSERT INTO records (t, event, body) VALUES (?, ?, ?)',
            (record['t'], record['event'], body))

    def records(self):
        return [json.loads(body) for (body,) in self._db.execute(
            'SELECT body FROM records ORDER BY seq')]


def check_clean(text, secrets):
    for secret in secrets:
        if secret and secret in text:
            raise SecretLeak('refusing to write a secret to the journal')
