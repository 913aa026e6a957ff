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

"""The task agent: runs a server's tasks, reports, checkpoints.

``opie-bot`` puts this file, followed by its settings, on every server it
creates as cloud-init user data (a ``#!`` user script); the agent and the
client only meet in the job's object store.  Standard library only: this
file runs on any image with Python 3.  The objects each side writes:
``doc/source/design/client.rst``, *The agent and the store*.
"""
import errno
import hashlib
import hmac
import io
import json
import os
import posixpath
import re
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request

# How much of a task's output its result keeps.
OUTPUT_TAIL = 4096
# Checkpoint archives kept per task besides the newest.
KEEP_OLD = 1
# A file being written, renamed to its key when complete.
TMP_SUFFIX = '.opie-tmp'
# The largest file moved as one object (an input, an output): each is
# read whole into memory, on the client and on the server.
MAX_FILE = 256 * 2 ** 20
# Bytes per object of a task's log, and objects copied per cycle while
# the task runs (all of them once it has ended).
LOG_CHUNK = 2 ** 20
LOG_CHUNKS_PER_CYCLE = 8
# The largest status, assignment, result or checkpoint pointer read.
SMALL_OBJECT = 2 ** 20
# Output files one run uploads at most.
MAX_OUTPUTS = 10000


class StageError(Exception):
    """An input a run cannot have: the task fails, saying which."""


def relative_path(path):
    """``path`` normalised, if it names something below the directory
    it is relative to; else ValueError."""
    norm = posixpath.normpath(path) if path else ''
    if '\x00' in path or norm in ('', '.', '..') or norm.startswith(
            ('/', '../')):
        raise ValueError('%r is not a path below its directory' % path)
    return norm


def matcher(patterns):
    """A test of relative paths against glob ``patterns``: ``*`` and
    ``?`` within one path component, ``**`` across any number of them."""
    parts = []
    for pattern in patterns:
        regex = ''
        for token in re.split(r'(\*\*/|\*\*|\*|\?)', pattern):
            regex += {'**/': '(?:[^/]*/)*', '**': '.*', '*': '[^/]*',
                      '?': '[^/]'}.get(token, re.escape(token))
        parts.append('(?:%s)' % regex)
    compiled = re.compile('|'.join(parts) or '(?!)', re.DOTALL)
    return lambda path: compiled.fullmatch(path) is not None


def run_name(task_id, attempt, server):
    """The part of the log's and the outputs' keys that names one run."""
    return '%s/%d-%s/' % (task_id, attempt, server)


class DirStore:
    """Objects as files under ``root``; writes are atomic renames.

    The store is shared with the tasks, so a link, FIFO or device put
    there is never read, and neither is a directory link on the way to
    an object: each directory below ``root`` is opened relative to the
    one above without following links, so no read or write leaves
    ``root`` (itself the tenant's, and may be a link)."""

    def __init__(self, root):
        self.root = root

    def _parts(self, key):
        parts = key.split('/')
        # A key read from an object (a result names its outputs and its
        # log) never leads out of the store.
        if any(part in ('', '.', '..') for part in parts):
            raise ValueError('%r names no object of the store' % key)
        return parts

    def _dir(self, key, create):
        """(descriptor of the directory of ``key``, its last name); a
        missing directory is FileNotFoundError unless ``create``."""
        parts = self._parts(key)
        if create:
            os.makedirs(self.root, exist_ok=True)
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for name in parts[:-1]:
                if create:
                    try:
                        os.mkdir(name, 0o755, dir_fd=fd)
                    except FileExistsError:
                        pass
                try:
                    below = os.open(name, os.O_RDONLY | os.O_DIRECTORY
                                    | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ENOTDIR, errno.ELOOP) and \
                            stat.S_ISLNK(os.lstat(name, dir_fd=fd).st_mode):
                        raise ValueError('object %s: %s is a symbolic link'
                                         % (key, name)) from None
                    raise
                os.close(fd)
                fd = below
        except BaseException:
            os.close(fd)
            raise
        return fd, parts[-1]

    def get(self, key, limit=None):
        """The object ``key``, or None; ValueError for a link, FIFO or
        device put there, or an object of more than ``limit`` bytes."""
        try:
            dir_fd, name = self._dir(key, create=False)
        except FileNotFoundError:
            return None
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                         | os.O_CLOEXEC, dir_fd=dir_fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ValueError('object %s is a symbolic link' % key) \
                    from None
            raise
        finally:
            os.close(dir_fd)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ValueError('object %s is not a regular file' % key)
        with os.fdopen(fd, 'rb') as f:
            return capped(f, key, limit)

    def _tmp(self, key, data):
        """(directory descriptor, name, temporary name) of ``data``
        written beside ``key``."""
        dir_fd, name = self._dir(key, create=True)
        tmp = '.%s%s' % (os.urandom(8).hex(), TMP_SUFFIX)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                         | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                         dir_fd=dir_fd)
            with os.fdopen(fd, 'wb') as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            os.close(dir_fd)
            raise
        return dir_fd, name, tmp

    def put(self, key, data):
        dir_fd, name, tmp = self._tmp(key, data)
        try:
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        finally:
            os.close(dir_fd)

    def create(self, key, data):
        """Write ``key`` unless it exists; True if this call wrote it."""
        dir_fd, name, tmp = self._tmp(key, data)
        try:
            os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp, dir_fd=dir_fd)
            os.close(dir_fd)

    def delete(self, key):
        try:
            dir_fd, name = self._dir(key, create=False)
        except FileNotFoundError:
            return
        try:
            os.unlink(name, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        finally:
            os.close(dir_fd)

    def list(self, prefix=''):
        out = []
        for top, dirs, files in os.walk(self.root):
            rel = os.path.relpath(top, self.root)
            for name in files:
                # Keys end in .json or .tar.gz; a task id may start
                # with a dot.
                if name.endswith(TMP_SUFFIX):
                    continue
                key = name if rel == '.' else '%s/%s' % (
                    rel.replace(os.sep, '/'), name)
                if key.startswith(prefix):
                    out.append(key)
        return sorted(out)

    def destroy(self):
        shutil.rmtree(self.root, ignore_errors=True)


class TempUrlStore:
    """Objects of one Swift container, each request signed with the
    container's TempURL key (HMAC-SHA256), so no token is needed.

    ``url`` is the container's URL, percent-encoded.  Swift's tempurl
    middleware HMACs ``METHOD\nEXPIRES\n/v1/ACCOUNT/CONTAINER/OBJECT``
    over the *decoded* path (the WSGI ``PATH_INFO``) as UTF-8, so the
    signature covers the plain names while the URL carries them quoted.
    """

    def __init__(self, url, key, ttl_s=300):
        parts = urllib.parse.urlsplit(url.rstrip('/'))
        self.path = urllib.parse.unquote(parts.path)
        self.url = urllib.parse.urlunsplit(
            parts[:2] + (urllib.parse.quote(self.path), '', ''))
        self.key = key.encode()
        self.ttl_s = ttl_s

    def _request(self, method, key, data=None, headers=None):
        expires = int(time.time() + self.ttl_s)
        body = '%s\n%d\n%s/%s' % (method, expires, self.path, key)
        sig = hmac.new(self.key, body.encode(), hashlib.sha256).hexdigest()
        url = '%s/%s?temp_url_sig=%s&temp_url_expires=%d' % (
            self.url, urllib.parse.quote(key), sig, expires)
        req = urllib.request.Request(url, data=data, method=method,
                                     headers=headers or {})
        return urllib.request.urlopen(req, timeout=60)

    def get(self, key, limit=None):
        try:
            with self._request('GET', key) as resp:
                return capped(resp, key, limit)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def put(self, key, data):
        self._request('PUT', key, data).close()

    def create(self, key, data):
        try:
            self._request('PUT', key, data, {'If-None-Match': '*'}).close()
            return True
        except urllib.error.HTTPError as exc:
            if exc.code == 412:
                return False
            raise

    def delete(self, key):
        try:
            self._request('DELETE', key).close()
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise


def open_store(spec):
    if spec['kind'] == 'dir':
        return DirStore(spec['path'])
    return TempUrlStore(spec['url'], spec['temp_url_key'])


def capped(f, key, limit):
    """All of the file ``f``, object ``key`` of the store; ValueError if
    it holds more than ``limit`` bytes (None: no cap)."""
    data = f.read() if limit is None else f.read(limit + 1)
    if limit is not None and len(data) > limit:
        raise ValueError('object %s is larger than %d bytes' % (key, limit))
    return data


def read_json(store, key, limit=SMALL_OBJECT):
    """The JSON object ``key`` (at most ``limit`` bytes), or None;
    ValueError if it is not one."""
    data = store.get(key, limit)
    return None if data is None else json.loads(data)


def write_json(store, key, value):
    store.put(key, json.dumps(value, sort_keys=True).encode())


def pack(directory):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w:gz') as tar:
        tar.add(directory, arcname='.')
    return buf.getvalue()


def unpack(data, directory):
    with tarfile.open(fileobj=io.BytesIO(data), mode='r:gz') as tar:
        tar.extractall(directory, filter='data')


def stage(store, inputs, work_dir):
    """Write a run's ``inputs`` (path: ``{object, exec}``) below
    ``work_dir``, a directory of its own, fresh for the run."""
    for path, spec in sorted(inputs.items()):
        try:
            target = os.path.join(work_dir, *relative_path(path).split('/'))
        except ValueError as exc:
            raise StageError('input %s' % exc) from None
        data = store.get(spec['object'])
        if data is None:
            raise StageError('input %r: %s is not in the store'
                             % (path, spec['object']))
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, 'wb') as f:
                f.write(data)
            os.chmod(target, 0o755 if spec.get('exec') else 0o644)
        except OSError as exc:
            # Two inputs that cannot both be (a file and a directory).
            raise StageError('input %r: %s' % (path, exc.strerror)) \
                from None


def upload_outputs(store, prefix, work_dir, patterns):
    """Upload the regular files of ``work_dir`` matching ``patterns``
    under ``prefix``; ``{prefix, files, skipped: {path: why}}``.  Links
    are not followed: a task's link to a file elsewhere on the server
    must not put that file in the store."""
    match = matcher(patterns)
    files, skipped = [], {}
    for top, dirs, names in os.walk(work_dir):
        dirs.sort()
        rel_top = os.path.relpath(top, work_dir)
        for name in sorted(names + [d for d in dirs if os.path.islink(
                os.path.join(top, d))]):
            rel = name if rel_top == '.' else '%s/%s' % (
                rel_top.replace(os.sep, '/'), name)
            if not match(rel):
                continue
            why = _upload_file(store, prefix + rel,
                               os.path.join(top, name), len(files))
            if why:
                skipped[rel] = why
            else:
                files.append(rel)
    return {'prefix': prefix, 'files': files, 'skipped': skipped}


def _upload_file(store, key, path, count):
    """Upload one output; why it was not, or None."""
    if count >= MAX_OUTPUTS:
        return 'more than %d outputs' % MAX_OUTPUTS
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return 'symbolic link' if os.path.islink(path) else exc.strerror
    with os.fdopen(fd, 'rb') as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            return 'not a regular file'
        if info.st_size > MAX_FILE:
            return 'larger than %d MB' % (MAX_FILE // 2 ** 20)
        store.put(key, f.read())
    return None


class LogCopy:
    """A task's output file, copied to the store as it grows (its objects:
    the design's *The agent and the store*; pieces of :data:`LOG_CHUNK`
    bytes)."""

    def __init__(self, store, prefix, path):
        self.store = store
        self.prefix = prefix
        self.path = path
        self.copied = 0

    def copy(self, pieces=None):
        """Copy what is new, at most ``pieces`` objects (None: all)."""
        with open(self.path, 'rb') as f:
            size = os.fstat(f.fileno()).st_size
            at = self.copied - self.copied % LOG_CHUNK
            while self.copied < size and pieces != 0:
                f.seek(at)
                data = f.read(LOG_CHUNK)
                self.store.put('%s%08d' % (self.prefix, at // LOG_CHUNK),
                               data)
                at += len(data)
                self.copied = at
                pieces = None if pieces is None else pieces - 1


class Run:
    """One attempt at a task on this server."""

    def __init__(self, agent, task_id, assignment):
        self.agent = agent
        self.task_id = task_id
        self.a = assignment
        self.attempt = assignment['attempt']
        self.dir = os.path.join(agent.workdir, task_id,
                                str(self.attempt))
        self.state_dir = os.path.join(self.dir, 'state')
        self.work_dir = os.path.join(self.dir, 'work')
        self.name = run_name(task_id, self.attempt, agent.server)
        self.log_copy = LogCopy(agent.store, 'logs/' + self.name,
                                os.path.join(self.dir, 'output'))
        self.proc = None
        self.error = None
        self.started = None
        self.tries = 0
        self.due = list(assignment.get('checkpoints_at', ()))
        self.stopping = False
        self.report = {'attempt': self.attempt, 'state': 'running',
                       'progress': assignment.get('start', 0.0)}

    def launch(self):
        """Start (or restart after a failure) from the latest checkpoint,
        in a working directory holding only the task's inputs."""
        for directory in (self.state_dir, self.work_dir):
            shutil.rmtree(directory, ignore_errors=True)
            os.makedirs(directory)
        try:
            stage(self.agent.store, self.a.get('inputs', {}),
                  self.work_dir)
        except StageError as exc:
            self.error = str(exc)
            return
        start = self.agent.restore(self.task_id, self.state_dir)
        self.a['start'] = start
        env = dict(os.environ, OPIE_TASK_ID=self.task_id,
                   OPIE_STATE_DIR=self.state_dir,
                   OPIE_SPEED=str(self.agent.speed))
        # Appended to: a retry's output follows the failed try's, and the
        # copy in the store stays a copy of one growing file.
        self.log = open(self.log_copy.path, 'ab')
        self.proc = subprocess.Popen(
            self.a['command'], shell=True, cwd=self.work_dir, env=env,
            stdout=self.log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
        self.started = time.monotonic()
        self.tries += 1

    def progress(self):
        try:
            with open(os.path.join(self.state_dir, 'progress')) as f:
                return min(max(float(f.read()), 0.0), 1.0)
        except (OSError, ValueError):
            pass
        work = self.a.get('work_s') or 0.0
        if work <= 0:
            return self.a['start']
        done = (time.monotonic() - self.started) * self.agent.speed / work
        return min(self.a['start'] + done, 0.99)

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self.proc is not None:
            self.log.close()

    def step(self):
        """Advance; return True once the run is over."""
        if self.error:
            return self._commit(None, {'error': self.error})
        rc = self.proc.poll()
        if rc is None and self.stopping:
            fraction = self.progress()
            self.agent.checkpoint(self.task_id, self.state_dir, fraction)
            self.kill()
            self.log_copy.copy()
            self.report.update(state='stopped', progress=fraction)
            return True
        if rc is None:
            elapsed = time.monotonic() - self.started
            while self.due and self.due[0] <= elapsed:
                self.due.pop(0)
                self.agent.checkpoint(self.task_id, self.state_dir,
                                      self.progress())
            self.report['progress'] = self.progress()
            self.log_copy.copy(LOG_CHUNKS_PER_CYCLE)
            return False
        self.log.close()
        if rc != 0 and self.tries <= self.a.get('retries', 0):
            self.launch()
            return False
        self.log_copy.copy()
        with open(self.log_copy.path, 'rb') as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - OUTPUT_TAIL))
            output = f.read().decode('utf-8', 'replace')
        outputs = upload_outputs(self.agent.store, 'outputs/' + self.name,
                                 self.work_dir, self.a.get('outputs', ()))
        return self._commit(rc, {'output': output, 'outputs': outputs,
                                 'log': self.log_copy.prefix})

    def _commit(self, rc, fields):
        """Commit the result, unless another run did; the run is over."""
        result = dict(fields, task=self.task_id, exit_status=rc,
                      attempt=self.attempt, server=self.agent.server,
                      ended_at=time.time())
        committed = self.agent.store.create(
            'results/%s.json' % self.task_id,
            json.dumps(result, sort_keys=True).encode())
        self.report.update(state='finished' if rc == 0 else 'failed',
                           progress=1.0, committed=committed,
                           exit_status=rc)
        if 'error' in fields:
            self.report['error'] = fields['error']
        return True


class Agent:
    def __init__(self, config, workdir):
        self.server = config['server']
        self.store = open_store(config['store'])
        self.speed = config.get('speed', 1.0)
        self.poll_s = config.get('poll_s', 5.0)
        self.workdir = workdir
        self.runs = {}
        self.over = {}

    def restore(self, task_id, state_dir):
        """Unpack the task's latest checkpoint; the fraction it saved."""
        latest = read_json(self.store, 'checkpoints/%s/latest.json' % task_id)
        if latest is None:
            return 0.0
        data = self.store.get(latest['object'])
        if data is None:
            return 0.0
        unpack(data, state_dir)
        return latest['fraction']

    def checkpoint(self, task_id, state_dir, fraction):
        prefix = 'checkpoints/%s/' % task_id
        latest = read_json(self.store, prefix + 'latest.json')
        seq = latest['seq'] + 1 if latest else 1
        obj = '%s%d.tar.gz' % (prefix, seq)
        self.store.put(obj, pack(state_dir))
        write_json(self.store, prefix + 'latest.json', {
            'seq': seq, 'object': obj, 'fraction': fraction,
            'server': self.server, 'written_at': time.time()})
        if seq > KEEP_OLD + 1:
            self.store.delete('%s%d.tar.gz' % (prefix, seq - KEEP_OLD - 1))

    def cycle(self):
        base = 'servers/%s/' % self.server
        wanted = read_json(self.store, base + 'assign.json') or {}
        for task_id, run in list(self.runs.items()):
            if wanted.get(task_id, {}).get('attempt') != run.attempt:
                run.kill()
                del self.runs[task_id]
        for task_id, assignment in wanted.items():
            key = (task_id, assignment['attempt'])
            if task_id not in self.runs and key not in self.over:
                run = Run(self, task_id, assignment)
                # A store that fails now is tried again next cycle.
                run.launch()
                self.runs[task_id] = run
            if task_id in self.runs:
                self.runs[task_id].stopping = bool(assignment.get('stop'))
        for task_id, run in list(self.runs.items()):
            if run.step():
                self.over[(task_id, run.attempt)] = run.report
                del self.runs[task_id]
        tasks = {t: report for (t, _), report in self.over.items()
                 if wanted.get(t, {}).get('attempt') == report['attempt']}
        tasks.update((t, r.report) for t, r in self.runs.items())
        write_json(self.store, base + 'status.json',
                   {'heartbeat': time.time(), 'tasks': tasks})

    def serve(self):
        while True:
            try:
                self.cycle()
            except (OSError, ValueError) as exc:
                # A store hiccup: the next cycle tries again.
                print('opie-agent: %s' % exc, file=sys.stderr, flush=True)
            time.sleep(self.poll_s)


def main(config):
    workdir = os.environ.get('OPIE_AGENT_DIR', '/var/lib/opie-agent')
    os.makedirs(workdir, exist_ok=True)
    Agent(config, workdir).serve()
