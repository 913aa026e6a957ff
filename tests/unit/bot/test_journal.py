"""The SQLite journal: durable, ordered, and never holds a secret."""
import os

import pytest

from opie.bot import journal as journal_mod


def test_records_and_settings_survive_reopening(tmp_path):
    path = journal_mod.path_for(str(tmp_path / 'jobs'), 'j-1')
    j = journal_mod.Journal(path, create=True)
    j.set_meta(job_id='j-1', t0=12.5)
    j.append({'t': 0.0, 'event': 'plan', 'servers': 2})
    j.append({'t': 1.5, 'event': 'server_create', 'server': 'a'})
    j.close()

    again = journal_mod.Journal(path)
    assert [r['event'] for r in again.records()] == ['plan',
                                                     'server_create']
    assert again.meta() == {'job_id': 'j-1', 't0': 12.5}


def test_a_record_holding_a_secret_is_refused(tmp_path):
    j = journal_mod.Journal(str(tmp_path / 'j.sqlite'), create=True)
    j.secrets = ('s3cret-token',)
    with pytest.raises(journal_mod.SecretLeak):
        j.append({'t': 0.0, 'event': 'x', 'note': 'has s3cret-token in'})
    assert j.records() == []


def test_missing_or_foreign_file_is_a_journal_error(tmp_path):
    with pytest.raises(journal_mod.JournalError, match='no journal'):
        journal_mod.Journal(str(tmp_path / 'none.sqlite'))
    junk = tmp_path / 'junk.sqlite'
    junk.write_bytes(os.urandom(4096))
    with pytest.raises(journal_mod.JournalError):
        journal_mod.Journal(str(junk)).meta()
