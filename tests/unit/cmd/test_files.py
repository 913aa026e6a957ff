"""Replacing the files Nova reads, atomically."""
import os

import pytest

from opie.cmd import errors
from opie.cmd import files


def test_a_new_file_gets_the_mode_open_would_give_it(tmp_path):
    path = tmp_path / 'etc' / 'nova.conf'
    umask = os.umask(0o027)
    try:
        files.write(str(path), 'text\n')
    finally:
        os.umask(umask)

    assert path.read_text() == 'text\n'
    assert path.stat().st_mode & 0o777 == 0o640


def test_a_replaced_file_keeps_mode_owner_and_symlink(tmp_path):
    target = tmp_path / 'real.conf'
    target.write_text('old\n')
    target.chmod(0o600)
    link = tmp_path / 'nova.conf'
    link.symlink_to(target)
    owner = target.stat().st_uid, target.stat().st_gid

    files.write(str(link), 'new\n')

    assert link.is_symlink()
    assert target.read_text() == 'new\n'
    assert target.stat().st_mode & 0o777 == 0o600
    assert (target.stat().st_uid, target.stat().st_gid) == owner
    assert sorted(p.name for p in tmp_path.iterdir()) == ['nova.conf',
                                                          'real.conf']


def test_a_given_mode_wins(tmp_path):
    path = tmp_path / 'opie.yaml'
    path.write_text('old\n')
    path.chmod(0o600)

    files.write(str(path), 'new\n', mode=0o644)

    assert path.stat().st_mode & 0o777 == 0o644


def test_a_failed_write_leaves_nothing_behind(tmp_path):
    path = tmp_path / 'nova.conf'
    path.mkdir()

    with pytest.raises(errors.UsageError,
                       match='cannot write %s: Is a directory' % path):
        files.write(str(path), 'text\n')

    assert [p.name for p in tmp_path.iterdir()] == ['nova.conf']
