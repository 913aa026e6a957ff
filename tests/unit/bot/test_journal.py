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

"""The SQLite journal: durable, ordered, and never holds a secret."""
import fcntl
import json
import os
import signal
import subprocess
import sys

import pytest

from opie.bot.state import journal as journal_mod


def test_records_and_settings_survive_reopening(tmp_path):
    path = journal_mod.path_for(str(tmp_path / 'jobs'), 'j-00abcd')
    j = journal_mod.Journal(path, create=True)
    j.set_meta(job_id='j-1', t0=12.5)
    j.append({'t': 0.0, 'event': 'plan', 'servers': 2})
    j.append({'t': 1.5, 'event': 'server_create', 'server': 'a'})
    j.close()

    again = journal_mod.Journal(path)
    assert [r['event'] for r in again.records()] == ['plan',
                                                     'server_create']
    assert again.meta() == {'job_id': 'j-1', 't0': 12.5}


def test_a_secret_is_blanked_out_of_free_text(tmp_path):
    j = journal_mod.Journal(str(tmp_path / 'j.sqlite'), create=True)
    j.secrets = ('s3cret-token',)
    j.append({'t': 0.0, 'event': 'x', 'note': 'has s3cret-token in',
              'risks': ['and s3cret-token here']})
    (record,) = j.records()
    assert 's3cret-token' not in json.dumps(record)
    assert record['note'] == 'has [redacted] in'


def test_a_short_secret_inside_ids_and_numbers_is_no_leak(tmp_path):
    # A password "1" occurs in task id "t1" and in 0.15: both are the
    # job's own data, and refusing them would make the job unrunnable.
    j = journal_mod.Journal(str(tmp_path / 'j.sqlite'), create=True)
    j.secrets = ('1',)
    record = {'t': 0.15, 'event': 'task_start', 'task': 't1',
              'server': 'a1b2', 'work_s': 10.5}
    j.append(record)
    assert j.records() == [record]


def test_one_writer_per_journal(tmp_path):
    path = str(tmp_path / 'j.sqlite')
    first = journal_mod.Journal(path, create=True)
    first.lock()
    second = journal_mod.Journal(path)
    assert second.driven()
    with pytest.raises(journal_mod.JournalBusy,
                       match='pid %d' % os.getpid()):
        second.lock()
    assert second.writer() == os.getpid()
    first.close()       # as when its process dies: the OS frees the lock
    assert not second.driven()
    assert second.writer() is None
    second.lock()


def test_a_holder_the_kernel_does_not_name(tmp_path, monkeypatch):
    # Without /proc/locks (not Linux) the lock still holds; only the
    # message cannot name the pid.
    monkeypatch.setattr(journal_mod, 'PROC_LOCKS', str(tmp_path / 'none'))
    path = str(tmp_path / 'j.sqlite')
    journal_mod.Journal(path, create=True).lock()
    journal = journal_mod.Journal(path)
    assert journal.driven()
    assert journal.writer() is None
    with pytest.raises(journal_mod.JournalBusy,
                       match=r'^another opie-bot is driving this job'):
        journal.lock()


def test_the_holder_asking_keeps_its_lock(tmp_path):
    path = str(tmp_path / 'j.sqlite')
    holder = journal_mod.Journal(path, create=True)
    holder.lock()
    assert holder.driven() and holder.writer() == os.getpid()
    with pytest.raises(journal_mod.JournalBusy):
        journal_mod.Journal(path).lock()


def test_missing_or_foreign_file_is_a_journal_error(tmp_path):
    with pytest.raises(journal_mod.JournalError, match='no journal'):
        journal_mod.Journal(str(tmp_path / 'none.sqlite'))
    junk = tmp_path / 'junk.sqlite'
    junk.write_bytes(os.urandom(4096))
    with pytest.raises(journal_mod.JournalError):
        journal_mod.Journal(str(junk)).meta()


def test_the_lock_of_a_killed_client_is_free(tmp_path):
    path = str(tmp_path / 'j.sqlite')
    journal_mod.Journal(path, create=True).close()
    holder = subprocess.Popen(
        [sys.executable, '-c', 'import sys\n'
         'from opie.bot.state import journal\n'
         'j = journal.Journal(sys.argv[1]); j.lock()\n'
         'print("locked", flush=True); sys.stdin.read()', path],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert holder.stdout.readline() == b'locked\n'
    again = journal_mod.Journal(path)
    with pytest.raises(journal_mod.JournalBusy,
                       match='pid %d' % holder.pid):
        again.lock()

    holder.send_signal(signal.SIGKILL)
    holder.wait()

    again.lock()


@pytest.mark.parametrize('make', [
    lambda p: os.symlink(p + '.victim', p),
    lambda p: os.mkfifo(p),
    lambda p: os.mkdir(p),
])
def test_a_journal_that_is_not_a_regular_file_is_refused(tmp_path, make):
    path = str(tmp_path / 'j.sqlite')
    with open(path + '.victim', 'w') as f:
        f.write('precious')
    make(path)

    # Never blocks (a FIFO), never writes through a link.
    for create in (False, True):
        with pytest.raises(journal_mod.JournalError, match='j.sqlite'):
            journal_mod.Journal(path, create=create)
    with open(path + '.victim') as f:
        assert f.read() == 'precious'


@pytest.mark.parametrize('job_id', ['../x-abcdef', '/tmp/x-abcdef', 'x',
                                    'j60-abcdeg', 'j60-abcdef\n'])
def test_a_job_id_names_a_journal_inside_the_directory(tmp_path, job_id):
    with pytest.raises(journal_mod.JournalError, match='not a job id'):
        journal_mod.path_for(str(tmp_path), job_id)


def _journal_with_a_record(path):
    journal = journal_mod.Journal(path, create=True)
    journal.append({'t': 0.0, 'event': 'plan', 'servers': 1})
    journal.close()


def _records(path):
    journal = journal_mod.Journal(path)
    try:
        return [r['event'] for r in journal.records()]
    finally:
        journal.close()


def test_a_journal_with_a_second_name_is_refused(tmp_path):
    # SQLite names its write-ahead log after the name it opened: through
    # a hard link, records went to another log and were lost.
    path = str(tmp_path / 'j.sqlite')
    _journal_with_a_record(path)
    os.link(path, path + '.lock')
    for name in (path, path + '.lock'):
        with pytest.raises(journal_mod.JournalError,
                           match='has 2 names'):
            journal_mod.Journal(name)
    os.unlink(path + '.lock')
    assert _records(path) == ['plan']


@pytest.mark.parametrize('swap', ['rename', 'replace', 'link'])
def test_a_journal_moved_under_its_client_stops_it(tmp_path, swap):
    # A journal moved, replaced or linked while a client runs: the next
    # record stops the client rather than go to a log by the old name.
    path = str(tmp_path / 'j.sqlite')
    _journal_with_a_record(path)
    held = journal_mod.Journal(path)
    held.lock()
    if swap == 'rename':
        os.rename(path, path + '.moved')
    elif swap == 'replace':
        _journal_with_a_record(str(tmp_path / 'other.sqlite'))
        os.rename(str(tmp_path / 'other.sqlite'), path)
    else:
        os.link(path, path + '.twin')
    with pytest.raises(journal_mod.JournalError, match='j.sqlite'):
        held.append({'t': 1.0, 'event': 'task_start', 'task': 't'})


def test_a_name_swapped_before_the_lock_is_taken_is_refused(tmp_path):
    # Between opening the journal and locking it, another file takes its
    # name: the lock would be on one file and the records in another.
    path = str(tmp_path / 'j.sqlite')
    _journal_with_a_record(path)
    _journal_with_a_record(str(tmp_path / 'copy.sqlite'))
    journal = journal_mod.Journal(path)
    os.rename(str(tmp_path / 'copy.sqlite'), path)
    with pytest.raises(journal_mod.JournalError, match='moved or replaced'):
        journal.lock()
    assert not journal.driven()


def test_a_reader_asking_takes_no_lock(tmp_path, monkeypatch):
    # status and list ask whether a client drives the job; with the
    # kernel's table of locks they ask without locking, so a resume at
    # the same moment is never turned away.
    path = str(tmp_path / 'j.sqlite')
    journal = journal_mod.Journal(path, create=True)
    calls = []
    monkeypatch.setattr(journal_mod.fcntl, 'flock',
                        lambda *args: calls.append(args))
    assert not journal.driven() and journal.writer() is None
    assert calls == []


def test_a_reader_probing_with_a_shared_lock_is_waited_out(
        tmp_path, monkeypatch):
    # Where the kernel keeps no table of locks, a reader probes with a
    # shared lock for a moment; a client taking the lock waits it out.
    path = str(tmp_path / 'j.sqlite')
    journal_mod.Journal(path, create=True).close()
    probe = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(probe, fcntl.LOCK_SH)
        monkeypatch.setattr(journal_mod.time, 'sleep', lambda _: fcntl.flock(
            probe, fcntl.LOCK_UN))
        journal = journal_mod.Journal(path)
        journal.lock()
        assert journal.writer() == os.getpid()
    finally:
        os.close(probe)


@pytest.mark.parametrize('make', [os.mkfifo, os.mkdir])
def test_a_strange_file_where_sqlite_keeps_its_log_is_one_error(
        tmp_path, make):
    path = str(tmp_path / 'j.sqlite')
    _journal_with_a_record(path)
    make(path + '-wal')
    with pytest.raises(journal_mod.JournalError, match='j.sqlite'):
        journal = journal_mod.Journal(path)
        journal.lock()
        journal.append({'t': 1.0, 'event': 'task_start', 'task': 't'})


@pytest.mark.parametrize('tamper', [
    os.unlink, lambda name: os.rename(name, name + '.moved')])
def test_tampering_beside_a_held_journal_lets_no_second_writer(
        tmp_path, tamper):
    path = str(tmp_path / 'j.sqlite')
    first = journal_mod.Journal(path, create=True)
    first.lock()
    for name in os.listdir(tmp_path):
        if name not in ('j.sqlite', 'j.sqlite-wal', 'j.sqlite-shm'):
            tamper(str(tmp_path / name))

    with pytest.raises(journal_mod.JournalBusy,
                       match='pid %d' % os.getpid()):
        journal_mod.Journal(path).lock()


def test_a_moved_journal_keeps_its_lock(tmp_path):
    path = str(tmp_path / 'j.sqlite')
    first = journal_mod.Journal(path, create=True)
    first.lock()
    os.rename(path, path + '.moved')

    with pytest.raises(journal_mod.JournalError, match='no journal'):
        journal_mod.Journal(path).lock()
    os.rename(path + '.moved', path)
    with pytest.raises(journal_mod.JournalBusy):
        journal_mod.Journal(path).lock()
