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

"""A job's input files: checked before the job starts, uploaded once.

A task's ``inputs`` are paths relative to the job file's directory.
Before anything is created, every one must be a regular file of at most
:data:`agent.MAX_FILE` bytes inside that directory (not through ``..``,
an absolute path or a symbolic link pointing out of it); each problem is
one line naming the input and a task that uses it.  The check hashes
every file: the *manifest* ``{path: {sha256, size, exec}}`` is what the
job uses, journalled before the upload, so a ``resume`` uploads exactly
those contents again, or refuses a file changed since.

Objects are named by their content (``inputs/sha256-<digest>``) and
created only if absent: a file many tasks use is uploaded once, and an
upload cut short by a killed client is finished by ``resume`` without a
second copy of anything.
"""
import hashlib
import os
import stat

from opie.bot import agent

_BLOCK = 2 ** 20


class InputError(ValueError):
    """Inputs the job cannot use; one line per problem."""

    def __init__(self, *problems):
        super().__init__('; '.join(problems))
        self.problems = problems


def job_dir(job_path):
    """Where the inputs of the job file ``job_path`` are."""
    return os.path.dirname(os.path.abspath(job_path))


def scan(job, job_path):
    """The manifest of the inputs of ``job``, read from ``job_path``."""
    manifest, problems = {}, {}
    root = os.path.realpath(job_dir(job_path))
    for task in job.tasks:
        for given in task.inputs:
            try:
                path = agent.relative_path(given)
            except ValueError:
                path = given
            if path in manifest or given in problems:
                continue
            try:
                manifest[path] = _describe(root, given)
            except InputError as exc:
                problems[given] = '%s: task %s: input %s: %s' % (
                    job_path, task.id, given, exc)
    if problems:
        raise InputError(*problems.values())
    return manifest


def _describe(root, given):
    if os.path.isabs(given):
        raise InputError("an absolute path; give it relative to the job "
                         "file's directory")
    try:
        path = agent.relative_path(given)
    except ValueError:
        raise InputError("outside the job file's directory") from None
    real = os.path.realpath(os.path.join(root, path))
    if os.path.commonpath([root, real]) != root:
        raise InputError("outside the job file's directory (through a "
                         "symbolic link)")
    digest, size, mode = _hash(real)
    return {'sha256': digest, 'size': size, 'exec': bool(mode & 0o111)}


def _hash(path):
    """(sha256, size, mode) of the regular file ``path``, bounded."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW
                     | os.O_CLOEXEC)
    except FileNotFoundError:
        raise InputError('no such file') from None
    except OSError as exc:
        raise InputError(exc.strerror) from None
    info = os.fstat(fd)
    problem = ('a directory (list the files it holds)'
               if stat.S_ISDIR(info.st_mode) else
               'not a regular file' if not stat.S_ISREG(info.st_mode) else
               'larger than %d MB' % (agent.MAX_FILE // 2 ** 20)
               if info.st_size > agent.MAX_FILE else None)
    if problem:
        os.close(fd)
        raise InputError(problem)
    with os.fdopen(fd, 'rb') as f:
        digest = hashlib.sha256()
        for block in iter(lambda: f.read(_BLOCK), b''):
            digest.update(block)
    return digest.hexdigest(), info.st_size, info.st_mode


def key(entry):
    """The store object of one manifest entry."""
    return 'inputs/sha256-%s' % entry['sha256']


def upload(store, job_dir, manifest):
    """Create every input object that is not there yet; a file that no
    longer has its manifest's content is refused."""
    root = os.path.realpath(job_dir)
    for path, entry in sorted(manifest.items()):
        try:
            with open(os.path.join(root, path), 'rb') as f:
                data = f.read(agent.MAX_FILE + 1)
        except OSError as exc:
            raise InputError('input %s: %s since the job started' % (
                path, exc.strerror)) from None
        if hashlib.sha256(data).hexdigest() != entry['sha256']:
            raise InputError('input %s: changed since the job started; '
                             'put back the file it had, or cancel the job'
                             % path)
        store.create(key(entry), data)


def assigned(manifest, task):
    """What an agent needs to stage ``task``'s inputs."""
    out = {}
    for given in task.inputs:
        path = agent.relative_path(given)
        out[path] = {'object': key(manifest[path]),
                     'exec': manifest[path]['exec']}
    return out
