"""The SQLite journal: durable, ordered, and never holds a secret."""
import json
import os
import signal
import subprocess
import sys

import pytest

from opie.bot import journal as journal_mod


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
         'from opie.bot import journal\n'
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


def test_a_hard_link_cannot_turn_the_lock_against_the_journal(tmp_path):
    # Taking the lock must never write into a file the job's records
    # live in, whatever the directory holds next to the journal.
    path = str(tmp_path / 'j.sqlite')
    journal = journal_mod.Journal(path, create=True)
    journal.append({'t': 0.0, 'event': 'plan', 'servers': 1})
    journal.close()
    os.link(path, path + '.lock')

    again = journal_mod.Journal(path)
    again.lock()
    assert [r['event'] for r in again.records()] == ['plan']
    # A hard link is the same journal, so it is the same lock.
    with pytest.raises(journal_mod.JournalBusy):
        journal_mod.Journal(path + '.lock').lock()


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
