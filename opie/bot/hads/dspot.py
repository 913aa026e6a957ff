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

"""Dspot (HADS Alg. 1): how late preemptible servers may be planned to work.

Tasks planned on a preemptible server must end by Dspot < D, so that if the
server is lost the remaining tasks still fit before D on normal servers.
``paper`` is Alg. 1 as printed: the ``ceil(|B| / max_normal)`` longest tasks
run on the flavor with the fewest Gflops give the worst-case makespan
``mkp``, and ``Dspot = D - (mkp + alpha)``.  ``code`` is what the authors'
code does instead (research note A1): the shortest tasks, on the cheapest
normal flavor, without alpha.  A number fixes Dspot outright.

Whatever the rule, Dspot is capped by ``latest_safe``: the latest time at
which every preemptible server may be lost and the tasks they hold still
end before D on the normal servers the job's limits allow.  Neither rule
knows the limits of each flavor (a fast flavor may be offered only as
preemptible) and ``code`` keeps no reserve for the boot at all.
"""
import heapq
import math

from opie.bot.job import model


def list_makespan(durations, slots):
    """Makespan of ``durations`` run in order on ``slots`` parallel slots."""
    free = [0.0] * slots
    for d in durations:
        heapq.heapreplace(free, free[0] + d)
    return max(free)


def compute(job):
    policy = job.policy
    if not isinstance(policy.dspot, str):
        return float(policy.dspot)
    n = math.ceil(len(job.tasks) / policy.max_normal)
    flavors = job.flavors.values()
    if policy.dspot == 'code':
        vm = job.normal_by_price()[0]
        chosen = sorted(t.runtime_on(vm) for t in job.tasks)[:n]
        alpha = 0.0
    else:
        vm = min(flavors, key=lambda f: (f.gflops, f.name))
        chosen = sorted((t.runtime_on(vm) for t in job.tasks),
                        reverse=True)[:n]
        alpha = policy.alpha_s
    mkp = list_makespan(chosen, job.slots(vm))
    return max(job.deadline_s - (mkp + alpha), 0.0)


def normal_slots(job):
    """Task slots on the most normal servers the limits allow at once.

    Flavors with more slots first: the executor adds normal servers of
    every flavor that still ends a task before D, so the count is what
    the limits leave, not what the cheapest flavor alone offers.
    """
    flavors = sorted((f for f in job.flavors.values()
                      if f.limits[model.NORMAL] > 0),
                     key=lambda f: (-job.slots(f), f.name))
    servers = job.policy.max_normal
    slots = 0
    for flavor in flavors:
        n = min(servers, flavor.limits[model.NORMAL])
        slots += n * job.slots(flavor)
        servers -= n
    return slots


def latest_safe(job):
    """The latest Dspot that keeps every task re-runnable before D.

    Lost just before Dspot, preemptible servers hold at most one task per
    slot the preemptible limits allow; re-run from scratch on normal
    servers, each at its slowest normal flavor, they take the list
    makespan of the longest of them on the normal slots, after one boot.
    With no normal server allowed at all nothing can take over: None.
    """
    normal = [f for f in job.flavors.values() if f.limits[model.NORMAL] > 0]
    slots = normal_slots(job)
    if not slots:
        return None
    held = sum(f.limits[model.PREEMPTIBLE] * job.slots(f)
               for f in job.flavors.values())
    redo = sorted((max(t.runtime_on(f) for f in normal
                       if t.memory_mb <= f.ram_mb)
                   for t in job.tasks
                   if any(t.memory_mb <= f.ram_mb for f in normal)),
                  reverse=True)[:held]
    reserve = job.policy.alpha_s + list_makespan(redo, slots)
    return max(job.deadline_s - reserve, 0.0)
