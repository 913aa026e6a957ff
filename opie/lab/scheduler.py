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

"""``opie-scheduler`` with the lab's fault points (:mod:`opie.lab.faults`).

OPIE's own scheduler command, unchanged, but that a worker which has
answered a request that preempted dies by SIGKILL before it terminates a
victim when a test arms :data:`~opie.lab.faults.KILL_BEFORE_TERMINATIONS`:
its claims are in Placement, the new server is built, and its victims are
left running for the reconciler. The worker waits for the request's
answer to reach the conductor (the instance is mapped to its cell), so the
fault is always this one and never a request left without an answer.
"""
# Nova's scheduler command sets up monkey patching when it is imported;
# nothing else of Nova may be imported before it.
from nova.cmd import scheduler  # noqa: F401,I100 (must come first)

import os  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402

from nova import context as nova_context  # noqa: E402
from nova import thread_pool_factory  # noqa: E402
from nova import objects  # noqa: E402

from opie.lab import faults  # noqa: E402
from opie.nova import cmd  # noqa: E402
from opie.nova.request import terminate  # noqa: E402

# Seconds a doomed worker waits for its answer to be taken.
ANSWER_TIMEOUT = 120


def _mapped(instance_uuid):
    try:
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            nova_context.get_admin_context(), instance_uuid)
    except Exception:  # not yet created, or the database away
        return False
    return mapping.cell_mapping is not None


def _die_once_answered(placed):
    deadline = time.monotonic() + ANSWER_TIMEOUT
    # The conductor maps the instances once it has the answer.
    while (not all(_mapped(uuid) for uuid in placed)
           and time.monotonic() < deadline):
        time.sleep(0.2)
    os.kill(os.getpid(), signal.SIGKILL)


def _dying(terminate_later):
    def terminate_later_or_die(self, preemptions, request_info):
        if faults.take(faults.KILL_BEFORE_TERMINATIONS):
            # In the background: the answer leaves after this returns.
            return thread_pool_factory.spawn(
                _die_once_answered,
                {p.instance_uuid for p in preemptions if p.instance_uuid})
        return terminate_later(self, preemptions, request_info)
    return terminate_later_or_die


def main():
    terminate.Terminator.terminate_later = _dying(
        terminate.Terminator.terminate_later)
    cmd.main()


if __name__ == '__main__':
    main()
