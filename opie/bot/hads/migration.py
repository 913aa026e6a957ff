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

"""The migration policy for a resumed server's running tasks.

A hibernation moves a server's work later by the whole time it was away,
so a task it still runs may now end too late to be saved: lost just
before its end, it could no longer restart on a normal server by D.
:func:`restart_now` decides, from the figures the executor gives it,
whether such a task restarts elsewhere now, while that still meets D;
the executor (:mod:`opie.bot.hads.executor`) applies the verdict.  A
guard HADS lacks: without it a server resuming just before its mtt can
run past D.
"""


def restart_now(end, redo_from_last, redo_from_latest, now, alpha,
                deadline):
    """Whether a running task restarts elsewhere now.

    ``end``: when it ends where it runs; ``redo_from_last``: the wall
    seconds a normal server takes to redo it from this run's last
    checkpoint (or its start); ``redo_from_latest``: a callable giving
    the same from its latest checkpoint, called only when the task is
    not safe where it runs (on a real cloud it reads the store); ``alpha``:
    a new server's boot margin.  Safe where it runs if, lost just before
    ``end``, it could still be redone by ``deadline``; else it restarts
    now if that meets ``deadline``, and runs on if nothing would.
    """
    if end + alpha + redo_from_last < deadline:
        return False
    return now + alpha + redo_from_latest() < deadline
