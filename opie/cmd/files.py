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

"""Writing the files Nova reads: provider.yaml, nova.conf.

A file is replaced atomically (written and flushed to disk next to it,
then renamed over it), so a service starting meanwhile, or a host crashing,
leaves the old file or the new one, never half of one. Only a regular file
is ever replaced: renaming over a device, a FIFO or a socket given by
mistake would put a world-readable file in its place (as root, even in
place of ``/dev/null``).
"""
import os
import stat
import tempfile

from opie.cmd import errors

# A new file holding a password: readable by its owner only.
SECRET_MODE = 0o600


def _stat(path):
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def _new_file_mode():
    """The mode ``open()`` gives a new file: 0666 less the umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write(path, text, mode=None, secret=False):
    """Replace the regular file ``path`` (created if missing) by ``text``,
    written as given (its line endings are the caller's).

    The file gets ``mode`` if given. Otherwise a file being replaced keeps
    its mode and owner, since a nova.conf holding passwords is often
    readable by Nova's group only, and a new file gets the mode ``open()``
    would give it, or 0600 if it holds a ``secret``. A symbolic link is
    kept: the file it points to is replaced. Anything but a regular file
    is refused.
    """
    given, path = path, os.path.realpath(path)
    directory = os.path.dirname(path)
    tmp = None
    try:
        old = _stat(path)
        if old is not None and not stat.S_ISREG(old.st_mode):
            raise errors.UsageError('refusing to write %s: not a regular '
                                    'file' % given)
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix='.opie-',
                                   suffix='.tmp')
        with os.fdopen(fd, 'w', encoding='utf-8', newline='') as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if mode is None and old is not None:
            os.chmod(tmp, old.st_mode & 0o7777)
            # Refused unless root or the owner already: the file would
            # change hands, and Nova might no longer read it.
            os.chown(tmp, old.st_uid, old.st_gid)
        elif mode is None:
            os.chmod(tmp, SECRET_MODE if secret else _new_file_mode())
        else:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
        tmp = None
        _sync_directory(directory)
    except OSError as exc:
        raise errors.UsageError('cannot write %s: %s' % (
            path, exc.strerror or exc)) from None
    finally:
        if tmp is not None:
            os.unlink(tmp)


def _sync_directory(directory):
    """Make the rename itself survive a crash."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
