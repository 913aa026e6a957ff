"""Dspot (HADS Alg. 1): how late preemptible servers may be planned to work.

Tasks planned on a preemptible server must end by Dspot < D, so that if the
server is lost the remaining tasks still fit before D on normal servers.
``paper`` is Alg. 1 as printed: the ``ceil(|B| / max_normal)`` longest tasks
run on the flavor with the fewest Gflops give the worst-case makespan
``mkp``, and ``Dspot = D - (mkp + alpha)``.  ``code`` is what the authors'
code does instead (research note A1): the shortest tasks, on the cheapest
normal flavor, without alpha.  A number fixes Dspot outright.
"""
import heapq
import math


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
