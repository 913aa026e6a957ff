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

"""The interfaces between the scheduling core and a cloud.

The core (:mod:`opie.bot.hads.executor`) only ever talks to these interfaces,
so the same code drives the simulated cloud (:mod:`opie.bot.sim`) and a
real one.  A backend calls the callbacks given to ``watch`` from the same
thread that runs the clock: the core is single-threaded and never locks.

A cloud that warns before it preempts (OPIE issue 26) reports a
``NOTICE`` with the time the server goes (``ServerEvent.at``); the
executor then asks the Runner to ``stop`` the server's tasks, each of
which checkpoints and reports ``STOPPED``.  A backend whose cloud gives
no notice reports none and never sees ``stop``.  The simulated cloud
gives one as told (``--notice``); the OpenStack backend reads OPIE's
from each server's metadata (:mod:`opie.bot.openstack.nova`) and asks
the task agent to stop (:mod:`opie.bot.openstack.runner`).
"""
import abc
import dataclasses
import typing

# What a Cloud reports about a server it did not delete on our behalf.
ACTIVE = 'active'            # booted, ready to run tasks
HIBERNATED = 'hibernated'    # frozen by the provider, may resume
RESUMED = 'resumed'          # back from hibernation, tasks continue
TERMINATED = 'terminated'    # preempted for good (OPIE deletes or shelves)
BOOT_FAILED = 'boot_failed'  # never booted (ERROR): lost, not preempted
NOTICE = 'notice'            # will be hibernated or terminated at ``at``

FINISHED = 'finished'        # the task committed its result
STOPPED = 'stopped'          # checkpointed on request and stopped cleanly


@dataclasses.dataclass(frozen=True)
class ServerEvent:
    kind: str
    server_id: str
    at: typing.Optional[float] = None    # NOTICE: when the server goes


@dataclasses.dataclass(frozen=True)
class TaskEvent:
    kind: str
    server_id: str
    task_id: str


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    task_id: str
    fraction: float      # of the task's work, 0..1
    server_id: str
    written_at: float


@dataclasses.dataclass(frozen=True)
class TaskStatus:
    running: bool        # False while its server is hibernated
    progress: float      # fraction of the work done, 0..1


class Clock(abc.ABC):
    """Time in seconds since the job started, and timers."""

    @abc.abstractmethod
    def now(self) -> float:
        """Current time."""

    @abc.abstractmethod
    def call_at(self, when: float, callback, *args) -> object:
        """Run ``callback(*args)`` at ``when``; return a handle."""

    @abc.abstractmethod
    def cancel(self, handle) -> None:
        """Forget a timer; a no-op if it already ran."""


class Cloud(abc.ABC):
    @abc.abstractmethod
    def create_server(self, name: str, flavor, preemptible: bool) -> str:
        """Ask for a server; return its id.  ACTIVE follows when booted."""

    @abc.abstractmethod
    def delete_server(self, server_id: str) -> bool:
        """Delete a server the job no longer needs (no event follows);
        True if the cloud had ended it first, unreported (a preemption)."""

    @abc.abstractmethod
    def watch(self, callback: typing.Callable[[ServerEvent], None]) -> None:
        """Report server events to ``callback``."""


class Runner(abc.ABC):
    @abc.abstractmethod
    def start(self, server_id: str, task_id: str, run) -> None:
        """Start a task from scratch; ``run`` is a checkpoint.TaskRun."""

    @abc.abstractmethod
    def restore(self, server_id: str, task_id: str, run,
                checkpoint: Checkpoint) -> None:
        """Start a task from ``checkpoint`` (``run.start`` is its fraction)."""

    @abc.abstractmethod
    def poll(self, server_id: str, task_id: str) -> TaskStatus:
        """Where a started task stands."""

    @abc.abstractmethod
    def kill(self, server_id: str, task_id: str) -> None:
        """Stop a task; its checkpoints stay in the CheckpointStore."""

    def stop(self, server_id: str, task_id: str) -> None:
        """Checkpoint a task where it stands, then stop it: STOPPED
        follows once the checkpoint is in the CheckpointStore (nothing, if
        the server goes first).  Asked only after a NOTICE."""
        raise NotImplementedError('this backend reports no notice')

    @abc.abstractmethod
    def watch(self, callback: typing.Callable[[TaskEvent], None]) -> None:
        """Report task events to ``callback``."""


class CheckpointStore(abc.ABC):
    @abc.abstractmethod
    def put(self, checkpoint: Checkpoint) -> None:
        """Keep ``checkpoint`` as the latest of its task."""

    @abc.abstractmethod
    def latest(self, task_id: str) -> typing.Optional[Checkpoint]:
        """The newest checkpoint of a task, or None."""


class StateStore(abc.ABC):
    """The job's journal: every decision and observation, in order."""

    @abc.abstractmethod
    def append(self, record: dict) -> None:
        """Add one record (a JSON-able dict with at least t and event)."""

    @abc.abstractmethod
    def records(self) -> typing.Iterable[dict]:
        """All records, oldest first."""
