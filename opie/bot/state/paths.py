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

"""The directories and files opie-bot writes: checked before any work.

A tenant's ``--data-dir`` or ``--report-dir`` naming a file used to end
a finished simulation in a traceback, and a symbolic link already at a
report's path sent the report to whatever it pointed at.  Each problem
is now one line (:class:`PathError`), found before the job is planned,
simulated or started, and reports are opened with ``O_NOFOLLOW`` so a
link planted after the check is refused too.  A task's outputs, written
below the data directory under names the task chose, never go through a
link either (:func:`write_below`); the temporary files a kill left on the
way are removed by the next fetch into that directory
(:func:`remove_temporaries`).
"""
import os
import re
import secrets
import stat

# What write_below names a file before it is renamed into place.
TEMPORARY = re.compile(r'\.opie-[0-9a-f]{16}\.tmp')


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


def write_below(base, parts, data):
    """Write ``data`` to ``base/parts[0]/.../parts[-1]``, making the
    directories on the way.  ``base`` is the tenant's (it may be a
    link); below it, a symbolic link where a directory or the file goes
    is refused, not followed, even one planted while this runs: each
    directory is opened relative to the one above, without following
    links, and the file is renamed into place."""
    try:
        os.makedirs(base, exist_ok=True)
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise PathError('%s: %s' % (base, exc.strerror)) from None
    try:
        for i, name in enumerate(parts[:-1]):
            try:
                os.mkdir(name, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
            except OSError as exc:
                # A name this file system refuses (too long), no space.
                raise _refused(base, parts[:i + 1], fd, exc) from None
            try:
                below = os.open(name, os.O_RDONLY | os.O_DIRECTORY
                                | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                raise _refused(base, parts[:i + 1], fd, exc) from None
            os.close(fd)
            fd = below
        _replace(fd, parts[-1], data, base, parts)
    finally:
        os.close(fd)


def _replace(fd, name, data, base, parts):
    try:
        info = os.lstat(name, dir_fd=fd)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise _refused(base, parts, fd, exc) from None
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise _refused(base, parts, fd, None)
    tmp = '.opie-%s.tmp' % secrets.token_hex(8)     # a TEMPORARY
    try:
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                      | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=fd)
    except OSError as exc:
        raise _refused(base, parts, fd, exc) from None
    try:
        with os.fdopen(out, 'wb') as f:
            f.write(data)
        os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException as exc:
        os.unlink(tmp, dir_fd=fd)
        if isinstance(exc, OSError):
            # A name this file system refuses (too long), no space.
            raise _refused(base, parts, fd, exc) from None
        raise


def remove_temporaries(top):
    """Remove below ``top`` the files :func:`write_below` names while
    it writes them, left by a kill before the rename; nothing else, and
    through no link."""
    try:
        for _, _, files, fd in os.fwalk(top, follow_symlinks=False):
            for name in files:
                if TEMPORARY.fullmatch(name) and stat.S_ISREG(
                        os.lstat(name, dir_fd=fd).st_mode):
                    os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        pass        # nothing fetched there yet


def _refused(base, parts, fd, exc):
    """Why ``base/parts`` cannot be written, as a :class:`PathError`."""
    path = os.path.join(base, *parts)
    try:
        link = stat.S_ISLNK(os.lstat(parts[-1], dir_fd=fd).st_mode)
    except OSError:
        link = False
    if link:
        return PathError('%s: is a symbolic link; opie-bot does not write '
                         'through links' % path)
    return PathError('%s: %s' % (path, exc.strerror if exc
                                 else 'not a regular file'))
