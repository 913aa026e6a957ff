"""Writing the files Nova reads: provider.yaml, nova.conf.

A file is replaced atomically (written next to it, then renamed over it),
so a service starting meanwhile reads the old file or the new one, never
half of one.
"""
import os
import tempfile

from opie.cmd import errors


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


def write(path, text, mode=None):
    """Replace the file ``path`` (created if missing) by ``text``.

    The file gets ``mode`` if given. Otherwise a file being replaced keeps
    its mode and owner, since a nova.conf holding passwords is often
    readable by Nova's group only, and a new file gets the mode ``open()``
    would give it. A symbolic link is kept: the file it points to is
    replaced.
    """
    path = os.path.realpath(path)
    directory = os.path.dirname(path)
    tmp = None
    try:
        old = _stat(path)
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix='.opie-',
                                   suffix='.tmp')
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            f.write(text)
        if mode is None and old is not None:
            os.chmod(tmp, old.st_mode & 0o7777)
            # Refused unless root or the owner already: the file would
            # change hands, and Nova might no longer read it.
            os.chown(tmp, old.st_uid, old.st_gid)
        else:
            os.chmod(tmp, _new_file_mode() if mode is None else mode)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            os.unlink(tmp)
        raise errors.UsageError('cannot write %s: %s' % (
            path, exc.strerror or exc)) from None
