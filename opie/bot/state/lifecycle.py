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

"""A job's lifecycle on a cloud: states that only go forward.

::

    running --(client dies)--> paused --(resume)--> running
    running --(all tasks ended)--> done
    running --(horizon, resumed past it, or a client error)--> stopped
    stopped --(resume)--> running    (past the horizon: straight back)
    any ----(cancel)--> cancelled          (a done job stays done)

``done`` and ``cancelled`` are final: ``resume`` refuses them, since
running a finished job again would bill every task a second time and
overwrite its report.  A ``stopped`` job is past its horizon: a
``resume`` creates nothing, it only deletes what a client killed while
stopping left (see :mod:`opie.bot.openstack.live`).  The state is read
from the journal's records, not only from its settings, so a client
killed between writing its last record and saving the state leaves the
same answer: a cancel journals its intent (``cancelling``) before it
deletes anything.
"""
RUNNING, PAUSED, STOPPED, DONE, CANCELLED = (
    'running', 'paused', 'stopped', 'done', 'cancelled')
FINAL = (DONE, CANCELLED)


class Final(ValueError):
    """The job is in a final state; one line naming the job and it."""


def state(saved, events, driven):
    """The job's state from its saved ``status`` setting, its journal's
    ``events`` in order, and whether a client drives it now.  A job
    stopped by a client's error may be resumed: it stays stopped only if
    no ``resume`` came after its last ``stop``."""
    if 'done' in events:
        return DONE
    if 'cancelling' in events or saved == CANCELLED:
        return CANCELLED
    last = [e for e in events if e in ('stopped', 'resume')][-1:]
    if last == ['stopped']:
        return STOPPED
    return RUNNING if driven else PAUSED


def check_resumable(job_id, current):
    """Refuse to run a job again that has ended for good."""
    if current in FINAL:
        raise Final('job %s is %s: it cannot be resumed (opie-bot status '
                    '%s shows what it left)' % (job_id, current, job_id))
