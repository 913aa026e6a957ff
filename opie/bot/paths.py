"""The directories and files opie-bot writes: checked before any work.

A tenant's ``--data-dir`` or ``--report-dir`` naming a file used to end
a finished simulation in a traceback, and a symbolic link already at a
report's path sent the report to whatever it pointed at.  Each problem
is now one line (:class:`PathError`), found before the job is planned,
simulated or started, and reports are opened with ``O_NOFOLLOW`` so a
link planted after the check is refused too.
"""
import os
import stat


class PathError(ValueError):
    """A path opie-bot cannot use; one line naming it."""


def check_directory(option, path):
    """``path`` is a directory, or can be made one: its nearest existing
    ancestor is a directory.  Nothing is created."""
    probe = os.path.abspath(path)
    while True:
        try:
            info = os.stat(probe)
        except FileNotFoundError:
            parent = os.path.dirname(probe)
            if parent == probe:
                return
            probe = parent
            continue
        except OSError as exc:
            raise PathError('%s %s: %s' % (option, path, exc.strerror)) \
                from None
        if not stat.S_ISDIR(info.st_mode):
            raise PathError('%s %s: %s is not a directory' % (
                option, path, 'it' if probe == os.path.abspath(path)
                else probe))
        return


def check_file(path):
    """``path`` may be written: absent, or a regular file (never a
    symbolic link, whose target would be overwritten)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise PathError('%s: %s' % (path, exc.strerror)) from None
    if stat.S_ISLNK(info.st_mode):
        raise PathError('%s: is a symbolic link; opie-bot does not write '
                        'through links' % path)
    if not stat.S_ISREG(info.st_mode):
        raise PathError('%s: not a regular file' % path)


def write_text(path, text):
    """Write ``path`` (created or truncated), refusing a link there."""
    check_file(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC
                     | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise PathError('%s: %s' % (path, exc.strerror)) from None
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
        f.write(text)
