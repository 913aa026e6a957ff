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

"""Checkpoint policy (HADS Eq. 1 and 2) and the runs a task is split into.

A task on a preemptible server writes ``n = floor(e * ovh / dump)``
checkpoints (Eq. 1), ``dump = base + per_mb * memory``.  HADS spaces them
``e / n`` apart (Eq. 2), which puts the last one at the very end of the task
where it saves nothing; with the paper's figures n is usually 1, so the
literal rule never saves any work.  The default, ``interior``, spaces the n
checkpoints ``e / (n + 1)`` apart so every one of them is useful;
``paper`` keeps Eq. 2 and drops the checkpoint that would fall on the end.
Normal servers are never preempted, so tasks there take no checkpoints.

Progress is a fraction of the task's work, so a checkpoint taken on one
flavor restores on another (research note A11); a restore costs one dump.
"""
import dataclasses
import math
import typing

from opie.bot.job import model

MAX_PER_RUN = 1000


def dump_s(policy, task):
    return policy.dump_base_s + policy.dump_per_mb_s * task.memory_mb


def count(policy, task, flavor):
    """Eq. 1: how many checkpoints fit in the overhead budget (at most
    :data:`MAX_PER_RUN`: a dump of a few milliseconds would otherwise
    ask for millions)."""
    return min(int(math.floor(task.runtime_on(flavor) * policy.ckpt_overhead
                              / dump_s(policy, task))), MAX_PER_RUN)


def positions(policy, task, flavor):
    """Fractions of the work at which checkpoints complete, ascending."""
    n = count(policy, task, flavor)
    if policy.checkpoints == 'paper':
        return tuple(k / n for k in range(1, n))
    return tuple(k / (n + 1) for k in range(1, n + 1))


@dataclasses.dataclass(frozen=True)
class TaskRun:
    """One uninterrupted attempt at a task on one server.

    ``start`` is the fraction of the work already saved (0 for a fresh
    task), ``work_s`` the task's full run time on this server's flavor.
    """
    start: float
    work_s: float
    checkpoints: typing.Tuple[float, ...]
    dump_s: float
    restore_s: float

    @property
    def wall_s(self):
        return (self.restore_s + self.work_s * (1.0 - self.start)
                + self.dump_s * len(self.checkpoints))

    @property
    def checkpoint_times(self):
        """Seconds into the run at which each checkpoint completes."""
        return tuple(self.restore_s + (frac - self.start) * self.work_s
                     + m * self.dump_s
                     for m, frac in enumerate(self.checkpoints, 1))

    def saved_after(self, elapsed):
        """The fraction saved once the run has lasted ``elapsed`` seconds."""
        saved = self.start
        for frac, done_at in zip(self.checkpoints, self.checkpoint_times):
            if done_at > elapsed:
                break
            saved = frac
        return saved

    def done_after(self, elapsed):
        """The fraction of the work done once the run has lasted
        ``elapsed`` seconds (the restore and the dumps do none)."""
        left = elapsed - self.restore_s
        done = self.start
        for frac in self.checkpoints:
            if left <= (frac - done) * self.work_s:
                break
            left -= (frac - done) * self.work_s + self.dump_s
            done = frac
            if left <= 0:
                return done
        return min(1.0, done + max(left, 0.0) / self.work_s)

    def elapsed_for(self, fraction):
        """The least time after which :meth:`done_after` reaches
        ``fraction`` (at least ``start``)."""
        dumps = sum(1 for frac in self.checkpoints if frac < fraction)
        return (self.restore_s + max(fraction - self.start, 0.0)
                * self.work_s + dumps * self.dump_s)


def plan_run(policy, task, flavor, market, saved=0.0):
    """The run of ``task`` on a ``market`` server of ``flavor``."""
    dump = dump_s(policy, task)
    if market == model.PREEMPTIBLE:
        ckpts = tuple(p for p in positions(policy, task, flavor)
                      if p > saved)
    else:
        ckpts = ()
    return TaskRun(start=saved, work_s=task.runtime_on(flavor),
                   checkpoints=ckpts, dump_s=dump,
                   restore_s=dump if saved > 0 else 0.0)
