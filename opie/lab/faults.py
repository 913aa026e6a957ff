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

"""Faults an integration test arms in the lab's services, one file each.

A test arms a fault by creating ``<lab>/data/faults/<name>``
(:func:`arm`). The first service process that reaches the fault's point
takes it by renaming the file to ``<name>.<host>.<pid>``: a rename is
atomic, so exactly one process fails there, however many race, and the
test reads afterwards who did (:func:`taken`). The points live in the
lab's own wrappers of Nova's services (:mod:`opie.lab.virt`,
:mod:`opie.lab.scheduler`), never in OPIE: the product runs as shipped.
"""
import os
import socket

from oslo_config import cfg

# The next build on any compute fails in the hypervisor (a reschedule).
FAIL_BUILD = 'fail-next-build'
# The next scheduler worker that answered a request which preempted is
# SIGKILLed before it terminates a victim.
KILL_BEFORE_TERMINATIONS = 'kill-before-terminations'

OPTS = [
    cfg.StrOpt('faults_dir', help='Where the lab\'s tests arm faults, one '
               'file each (opie.lab.faults).'),
]
cfg.CONF.register_opts(OPTS, group='lab')


def directory(lab):
    return lab.data / 'faults'


def arm(lab, name):
    """Arm fault ``name``: the next process at its point takes it."""
    directory(lab).mkdir(parents=True, exist_ok=True)
    (directory(lab) / name).touch()


def taken(lab, name):
    """[(host, pid)] of the processes that took fault ``name``."""
    found = []
    for path in sorted(directory(lab).glob(name + '.*')):
        host, pid = path.name[len(name) + 1:].rsplit('.', 1)
        found.append((host, int(pid)))
    return found


def disarm(lab, name):
    """Forget fault ``name``, armed or taken."""
    for path in directory(lab).glob(name + '*'):
        path.unlink()


def take(name, host=None):
    """True in the one process that takes fault ``name`` (armed in
    ``[lab] faults_dir``), which must then fail; False elsewhere."""
    where = cfg.CONF.lab.faults_dir
    if not where:
        return False
    path = os.path.join(where, name)
    try:
        os.rename(path, '%s.%s.%d' % (
            path, host or cfg.CONF.host or socket.gethostname(),
            os.getpid()))
    except FileNotFoundError:
        return False
    return True
