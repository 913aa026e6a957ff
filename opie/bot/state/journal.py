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

"""The job's journal in SQLite: a StateStore that outlives the client.

One file per job holds the job's settings (``meta``: the job file, where
its objects live, the wall-clock time of t=0, how fast job time runs) and
every record the executor and the backends append, in order.  Each record
is committed before the call that appended it returns, so a client killed
at any point leaves every decision it acted on in the journal, and
``opie-bot resume`` continues from there.

One client drives a job at a time: :meth:`Journal.lock` takes an
exclusive ``flock`` on the journal file itself, which the OS releases when
the holder exits or dies, so a second ``resume`` (or a ``cancel`` while a
client runs) stops with one line before it reads or touches anything,
and a crashed client never leaves a stale lock behind.  The lock is the
journal's inode, not a file beside it, so nothing the directory holds can
make taking the lock write anywhere.  SQLite finds the log of its latest
records by the journal's name, so the journal keeps exactly one name: a
hard link is refused, and the name is checked against the locked file
when the lock is taken and before every write, so a journal moved,
replaced or linked under its client stops the client instead of sending
records where no one will read them.  The holder's pid, and whether there
is one, come from the kernel's table of locks: known the moment the lock
is taken, and asked without taking any lock.  SQLite locks with
``fcntl``, which Linux keeps apart from ``flock``; the journal opens its
lock descriptor before SQLite opens the file and closes it after,
because closing any descriptor of a file drops every ``fcntl`` lock the
process holds on it.

Credentials never come here: the settings are the tenant's own job file
and options, which name a cloud of clouds.yaml or say "OS_* variables",
and :func:`redacted` blanks any value the client knows to be secret out
of the text a record carries.  Records are ids the
job file or the cloud chose and numbers the client computed; a short
password that happens to occur in a task id or in a float is no leak, and
must not make the job unrunnable, so only free text is searched.
"""
import contextlib
import fcntl
import json
import os
import re
import sqlite3
import stat
import time

from opie.bot.hads import interfaces

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


class JournalBusy(JournalError):
    """Another client drives the job."""


# Fields holding ids chosen by the job file or the cloud, never free text.
IDENTIFIERS = frozenset(('event', 'task', 'server', 'servers', 'kept',
                         'key', 'flavor', 'market', 'src', 'dst', 'reason',
                         'image', 'nonce'))
# A job name (see opie.bot.job.schema) and a random suffix.
JOB_ID = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,43}-[0-9a-f]{6}')
# Opening a journal: never through a link, never blocking on a FIFO.
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC \
    | os.O_NOCTTY
PROC_LOCKS = '/proc/locks'
# How long lock() waits out a reader's shared probe (see driven()).
PROBE_WAITS = 200
PROBE_WAIT_S = 0.005
REDACTED = '[redacted]'


def path_for(directory, job_id):
    """The journal of ``job_id`` in ``directory``; a job id never leaves
    it."""
    if not isinstance(job_id, str) or not JOB_ID.fullmatch(job_id):
        raise JournalError('%r is not a job id (a job name, a dash and six '
                           'hex digits)' % job_id)
    return os.path.join(directory, '%s.sqlite' % job_id)


def _flocks(fd):
    """``[(mode, pid)]`` of the ``flock`` locks on ``fd``'s file, mode
    ``WRITE`` or ``READ``, from Linux's ``/proc/locks``; None where the
    kernel does not say."""
    info = os.fstat(fd)
    inode = str(info.st_ino)
    ours = '%02x:%02x:%s' % (os.major(info.st_dev), os.minor(info.st_dev),
                             inode)
    same_file, same_inode = [], []
    try:
        with open(PROC_LOCKS, encoding='ascii', errors='replace') as f:
            rows = [line.split() for line in f]
    except OSError:
        return None
    for row in rows:
        # "1: FLOCK  ADVISORY  WRITE 1928 fe:00:2148314 0 EOF"; a waiter
        # reads "1: -> FLOCK ...", a POSIX lock "POSIX".
        if len(row) < 6 or row[1:3] != ['FLOCK', 'ADVISORY'] or \
                not row[4].isdigit():
            continue
        if row[5] == ours:
            same_file.append((row[3], int(row[4])))
        elif row[5].rpartition(':')[2] == inode:
            # Overlay filesystems may name another device than fstat.
            same_inode.append((row[3], int(row[4])))
    return same_file or same_inode


def _writer_in(locks):
    """The pid of the one exclusive holder among ``locks``, 0 if there
    is one the kernel does not name, None if there is none."""
    pids = {pid for mode, pid in locks if mode == 'WRITE'}
    if not pids:
        return None
    return pids.pop() if len(pids) == 1 else 0


def _busy(holder):
    """:class:`JournalBusy`, naming the holder's pid if the kernel did."""
    return JournalBusy('another opie-bot%s is driving this job; stop it '
                       'first' % (' (pid %d)' % holder if holder else ''))


def _open_journal(path, create):
    """A descriptor of the journal file, only if it is a regular file of
    this user (a new one, readable by this user alone, if ``create``)."""
    try:
        fd = os.open(path, _OPEN_FLAGS | (os.O_CREAT if create else 0),
                     0o600)
    except FileNotFoundError:
        raise JournalError('no journal %s' % path) from None
    except OSError as exc:
        raise JournalError('%s: %s' % (path, exc.strerror)) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
        os.close(fd)
        raise JournalError('%s: not a regular file of this user' % path)
    return fd


class Journal(interfaces.StateStore):
    def __init__(self, path, create=False):
        if create:
            os.makedirs(os.path.dirname(os.path.abspath(path)),
                        exist_ok=True)
        self.path = path
        self.secrets = ()
        self._held = False
        self._listeners = []
        self._fd = _open_journal(path, create)
        self._db = None
        try:
            self._db = sqlite3.connect(path, isolation_level=None)
            self._check_name()
            with self._sql():
                self._db.execute('PRAGMA journal_mode=WAL')
                self._db.execute('PRAGMA synchronous=FULL')
                self._db.executescript(SCHEMA)
        except JournalError:
            self.close()
            raise

    def close(self):
        if self._db is not None:
            self._db.close()
        if self._fd is not None:
            os.close(self._fd)  # after SQLite: see the module docstring
            self._fd = None

    # -- one writer ---------------------------------------------------------

    def lock(self):
        """Become the job's only writer, or :class:`JournalBusy`.

        A reader asking :meth:`driven` where the kernel names no lock
        holder takes a shared lock for a moment; that is waited out.
        """
        for _ in range(PROBE_WAITS):
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                locks = _flocks(self._fd)
                holder = None if locks is None else _writer_in(locks)
                if locks is None or holder is not None:
                    raise _busy(holder) from None
                time.sleep(PROBE_WAIT_S)
        else:
            raise _busy(None)
        try:
            self._check_name()
        except JournalError:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            raise
        self._held = True

    def driven(self):
        """True while some client holds the job's lock."""
        return self._writer() is not None

    def writer(self):
        """The pid of the client holding the job's lock, or None: no
        client holds it, or the kernel does not say who."""
        return self._writer() or None

    def _writer(self):
        """None when no client holds the lock, else its pid (0 when the
        kernel does not say)."""
        if self._held:
            return os.getpid()
        locks = _flocks(self._fd)
        if locks is not None:
            return _writer_in(locks)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        return None

    def _check_name(self):
        """The journal's name still leads to the file this client opened
        and locks, and to no other name: SQLite finds its write-ahead log
        by name, so a journal moved, linked or swapped under a client
        would take records somewhere else."""
        try:
            named = os.stat(self.path, follow_symlinks=False)
        except OSError:
            named = None
        opened = os.fstat(self._fd)
        if named is None or (named.st_dev, named.st_ino) != (
                opened.st_dev, opened.st_ino):
            raise JournalError('%s was moved or replaced while in use'
                               % self.path)
        if opened.st_nlink != 1:
            raise JournalError('%s has %d names (hard links); a journal '
                               'must have one' % (self.path,
                                                  opened.st_nlink))

    # -- settings ---------------------------------------------------------

    @contextlib.contextmanager
    def _sql(self):
        """SQLite's errors (a damaged file, a FIFO where its log goes, a
        full disk) as :class:`JournalError`, naming the journal."""
        try:
            yield
        except sqlite3.Error as exc:
            raise JournalError('%s: %s' % (self.path, exc)) from None

    def set_meta(self, **values):
        self._check_name()
        with self._sql(), self._db:
            for key, value in values.items():
                self._db.execute(
                    'INSERT OR REPLACE INTO meta VALUES (?, ?)',
                    (key, json.dumps(value)))

    def meta(self):
        with self._sql():
            rows = self._db.execute('SELECT key, value FROM meta').fetchall()
        return {k: json.loads(v) for k, v in rows}

    # -- the port ---------------------------------------------------------

    def append(self, record):
        stored = redacted(record, self.secrets)
        body = json.dumps(stored, sort_keys=True)
        self._check_name()
        with self._sql():
            self._db.execute(
                'INSERT INTO records (t, event, body) VALUES (?, ?, ?)',
                (record['t'], record['event'], body))
        for listener in self._listeners:
            listener(json.loads(body))

    def watch(self, callback):
        """Call ``callback(record)`` once each record is committed, as
        :meth:`records` will read it, before :meth:`append` returns (so
        before the client acts on it)."""
        self._listeners.append(callback)

    def records(self):
        with self._sql():
            rows = self._db.execute(
                'SELECT body FROM records ORDER BY seq').fetchall()
        return [json.loads(body) for (body,) in rows]


def redacted(value, secrets, field=None):
    """``value`` with every secret blanked out of its free text."""
    if isinstance(value, dict):
        return {k: redacted(v, secrets, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redacted(v, secrets, field) for v in value]
    if isinstance(value, str) and field not in IDENTIFIERS:
        for secret in secrets:
            if secret:
                value = value.replace(secret, REDACTED)
    return value
