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

"""The OPIE scheduler's heartbeat: proof that OPIE, not stock Nova, runs.

``opie-scheduler`` registers as ``nova-scheduler`` (same binary, topic and
service record), so the service list cannot tell it from the stock one.
Every ``[opie] heartbeat_interval`` seconds each scheduler worker
rewrites the file ``[opie] heartbeat_path`` (default
``$state_path/opie-scheduler.heartbeat``, or
``/var/lib/nova/opie-scheduler.heartbeat`` when ``[DEFAULT] state_path``
is left at Nova's default, its Python install: see
:class:`opie.nova.conf.StatePath`; atomically) with::

    {"host": "sched-1", "pid": 4242, "time": "2026-01-01T12:00:00Z",
     "interval": 30, "version": "1.0.0",
     "settings": {"costs": "period=1", "ranking": "victims", ...}}

and ``"safe_mode": "<why>"`` when it runs in safe mode
(:mod:`~opie.nova.safe_mode`).
``interval`` is the time within which the next beat is due: the beat
written at start gives the larger of ``heartbeat_interval`` and Nova's
``[DEFAULT] periodic_fuzzy_delay``, since Nova runs the first periodic
tasks up to that delay after start.

An audit on the scheduler host reads it (:func:`read`) and calls the OPIE
scheduler alive if ``time`` is less than two intervals old (:func:`age`,
:data:`ALIVE_INTERVALS`); so does ``opie-manage rollback`` before it takes
the host tokens away.
"""
import datetime
import json
import os
import stat
import tempfile

from oslo_utils import timeutils

from opie import version

# A scheduler whose heartbeat is younger than this many intervals runs.
ALIVE_INTERVALS = 2
# A heartbeat is a few hundred bytes; a file larger than this is none.
MAX_BYTES = 64 * 1024


def beat(path, host, interval, settings, safe_mode=None):
    """Write the heartbeat file for this process, now; ``safe_mode``: why
    it runs in safe mode (:mod:`~opie.nova.safe_mode`), if it does."""
    data = {
        'host': host,
        'pid': os.getpid(),
        'time': timeutils.utcnow().strftime('%Y-%m-%dT%H:%M:%SZ'),
        'interval': interval,
        'version': _version(),
        'settings': {
            'costs': str(settings.cost_model),
            'ranking': settings.ranking,
            'max_victims': settings.max_victims,
            'preempt_on_move': sorted(settings.preempt_on_move),
            'termination_mode': settings.termination_mode,
        },
    }
    if safe_mode:
        data['safe_mode'] = safe_mode
    directory = os.path.dirname(path) or '.'
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix='.opie-heartbeat-')
    try:
        with os.fdopen(fd, 'w') as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def read(path):
    """The last heartbeat written to ``path`` (decoded JSON), or None.

    Only a regular file (a symlink to one will do) of at most
    :data:`MAX_BYTES` is read: a FIFO would wait for a writer, a device
    (``/dev/zero``) or a log never end.
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, 'rb') as f:
            data = f.read(MAX_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_BYTES:
        return None
    try:
        return json.loads(data.decode('utf-8'))
    except (ValueError, RecursionError):
        return None


def age(beat, now):
    """Seconds from ``beat``'s (:func:`read`) ``time`` to ``now`` (an aware
    datetime); None if it has no valid time."""
    try:
        written = datetime.datetime.fromisoformat(beat['time'])
        return (now - written).total_seconds()
    except (KeyError, TypeError, ValueError):
        return None


def _version():
    return version.release()
