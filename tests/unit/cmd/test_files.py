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

"""Replacing the files Nova reads, atomically."""
import os
import socket
import stat

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

    with pytest.raises(errors.UsageError, match='not a regular file'):
        files.write(str(path), 'text\n')

    assert [p.name for p in tmp_path.iterdir()] == ['nova.conf']


def _special_files(tmp_path):
    """A FIFO, a socket, a directory and, as root, a character device (a
    copy of /dev/null): none of them is a file to replace."""
    fifo = tmp_path / 'fifo'
    os.mkfifo(fifo)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / 'socket'))
    found = [fifo, tmp_path / 'socket', tmp_path / 'directory']
    found[-1].mkdir()
    if os.getuid() == 0:
        os.mknod(tmp_path / 'null', 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        found.append(tmp_path / 'null')
    return sock, found


def test_what_is_not_a_regular_file_is_refused_and_kept(tmp_path):
    sock, special = _special_files(tmp_path)
    with sock:
        for path in special:
            kind = stat.S_IFMT(path.lstat().st_mode)
            link = tmp_path / ('link-to-' + path.name)
            link.symlink_to(path)
            for given in (path, link):
                with pytest.raises(errors.UsageError) as exc_info:
                    files.write(str(given), 'text\n')

                assert str(exc_info.value) == (
                    'refusing to write %s: not a regular file' % given)
                assert stat.S_IFMT(path.lstat().st_mode) == kind
    assert not [p for p in tmp_path.iterdir() if p.name.startswith('.opie')]


def test_a_new_secret_file_is_private_an_old_one_keeps_its_mode(tmp_path):
    new, old = tmp_path / 'new.conf', tmp_path / 'old.conf'
    old.write_text('old\n')
    old.chmod(0o640)
    umask = os.umask(0o022)
    try:
        files.write(str(new), 'password = x\n', secret=True)
        files.write(str(old), 'password = x\n', secret=True)
    finally:
        os.umask(umask)

    assert new.stat().st_mode & 0o777 == 0o600
    assert old.stat().st_mode & 0o777 == 0o640


def test_text_is_written_byte_for_byte(tmp_path):
    path = tmp_path / 'nova.conf'

    files.write(str(path), '[DEFAULT]\r\ndebug = True\r\nno end')

    assert path.read_bytes() == b'[DEFAULT]\r\ndebug = True\r\nno end'
