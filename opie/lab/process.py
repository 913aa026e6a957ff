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

"""Start, find and stop the lab's processes by the PIDs it recorded.

Each process leads a session of its own (gunicorn's workers, the
scheduler's workers, Erlang's helpers follow their leader in its process
group), logs to ``logs/<name>.log`` and is recorded in ``run/<name>.pid``
with its command line, so ``down`` stops exactly what ``up`` started and
never a process that merely reuses a recorded PID.
"""
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

from opie.lab import settings


class LabError(Exception):
    """The lab cannot do what was asked; the message says why."""


class Unavailable(LabError):
    """This machine cannot run the lab (no root for apt, ports taken)."""


def _pidfile(lab, name):
    return lab.run / ('%s.pid' % name)


def start(lab, name, argv, env=None, cwd=None, marker=None):
    """Start ``argv`` as the lab's ``name``; ``marker`` (default: the
    program's file name) is what its command line must show for ``down``
    to stop it later."""
    lab.run.mkdir(parents=True, exist_ok=True)
    lab.logs.mkdir(parents=True, exist_ok=True)
    full_env = dict(os.environ, **(env or {}))
    with open(lab.logs / ('%s.log' % name), 'ab') as log:
        proc = subprocess.Popen(
            [str(a) for a in argv], env=full_env, cwd=cwd, stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
    _pidfile(lab, name).write_text(json.dumps({
        'pid': proc.pid, 'started': time.time(),
        'marker': marker or os.path.basename(str(argv[0]))}))
    return proc


def _cmdline(pid):
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            return f.read().decode(errors='replace')
    except OSError:
        return None


def recorded(lab):
    """{name: pid} of the recorded processes that still run as recorded,
    in the order they were started."""
    entries = []
    if lab.run.is_dir():
        for path in lab.run.glob('*.pid'):
            entry = json.loads(path.read_text())
            cmdline = _cmdline(entry['pid'])
            # A script's command line names its interpreter first: look
            # for the marker anywhere in it.
            if cmdline is not None and entry['marker'] in cmdline:
                entries.append((entry['started'], path.stem, entry['pid']))
    return {name: pid for _, name, pid in sorted(entries)}


def _stat(pid):
    """/proc/PID/stat after the command name: state, ppid, pgrp, ...;
    None if the process is gone."""
    try:
        with open('/proc/%s/stat' % pid) as f:
            # "pid (comm) state ...": comm may hold spaces and parentheses.
            return f.read().rsplit(')', 1)[1].split()
    except OSError:
        return None


def running(pid):
    """Whether ``pid`` runs (a zombie has ended)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != 'Z'


def members(groups):
    """PIDs of the live (not zombie) processes of the process groups
    ``groups``: killpg(pgid, 0) also succeeds while only zombies are left,
    which orphans are when nothing reaps them."""
    found = set()
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        fields = _stat(entry)
        if fields and fields[0] != 'Z' and int(fields[2]) in groups:
            found.add(int(entry))
    return found


def stop_groups(pids, timeout=15):
    """Stop the process groups the ``pids`` lead, all at once: TERM, and
    KILL what is left after ``timeout`` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.killpg(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and members(set(pids)):
            time.sleep(0.1)


def stop(lab, names):
    """Stop the recorded processes ``names`` ({name: pid}) together."""
    stop_groups(list(names.values()))
    for name in names:
        _pidfile(lab, name).unlink(missing_ok=True)


def log_tail(lab, name, lines=15):
    path = lab.logs / ('%s.log' % name)
    if not path.exists():
        return '(no log)'
    return '\n'.join(path.read_text(errors='replace').splitlines()[-lines:])


def port_open(port, host=settings.HOST):
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def http_ok(url):
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except urllib.error.HTTPError as exc:
        # 401 and 300 (version lists) still prove the service answers.
        return exc.code < 500
    except OSError:
        return False


def wait(lab, procs, ready, timeout=180):
    """Wait until ``ready()`` holds; fail with the log of the process of
    ``procs`` ({name: Popen}) that died, or of all, on time out."""
    deadline = time.monotonic() + timeout
    while not ready():
        for name, proc in procs.items():
            if proc.poll() is not None:
                raise LabError('%s exited with status %s:\n%s' % (
                    name, proc.returncode, log_tail(lab, name)))
        if time.monotonic() > deadline:
            raise LabError('%s not ready after %d s:\n%s' % (
                ', '.join(procs), timeout, '\n'.join(
                    log_tail(lab, name) for name in procs)))
        time.sleep(0.5)


def _ancestors():
    """This process and its ancestors (down's own callers)."""
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        fields = _stat(pid)
        if not fields:
            break
        pid = int(fields[1])
    return pids


def leftovers(lab):
    """{pid: command line} of processes still running from the lab's
    directory or with it on their command line, but for this one and its
    callers."""
    root = str(lab.root)
    mine = _ancestors()
    found = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit() or int(entry) in mine:
            continue
        cmdline = _cmdline(int(entry))
        if cmdline is None:
            continue
        try:
            cwd = os.readlink('/proc/%s/cwd' % entry)
        except OSError:
            cwd = ''
        args = cmdline.replace('\0', ' ').strip()
        if root in args or cwd.startswith(root):
            found[int(entry)] = args
    return found
