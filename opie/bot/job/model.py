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

"""The job model: flavors, tasks, policy and the job itself.

Everything here is immutable; the map builder (:mod:`opie.bot.hads.job_map`)
and the executor derive their state from it.  Times are seconds from the
start of the job, prices are dollars per hour as the cloud quotes them.
"""
import dataclasses
import functools
import typing

PREEMPTIBLE = 'preemptible'
NORMAL = 'normal'
MARKETS = (PREEMPTIBLE, NORMAL)


@dataclasses.dataclass(frozen=True)
class Flavor:
    name: str
    vcpus: int
    ram_mb: float
    gflops: float
    price_h: typing.Mapping[str, float]
    limits: typing.Mapping[str, int]

    @property
    def gflops_per_vcpu(self):
        return self.gflops / self.vcpus


@dataclasses.dataclass(frozen=True)
class Task:
    id: str
    command: str
    memory_mb: float
    # Expected run time on one vCPU of each flavor, checkpoints excluded.
    runtime_s: typing.Mapping[str, float]
    inputs: typing.Tuple[str, ...] = ()
    # Glob patterns of the files the task leaves for the tenant.
    outputs: typing.Tuple[str, ...] = ()

    def runtime_on(self, flavor):
        return self.runtime_s[flavor.name]


@dataclasses.dataclass(frozen=True)
class Policy:
    ac_s: float = 900.0
    alpha_s: float = 180.0
    ckpt_overhead: float = 0.10
    max_normal: int = 20
    # 'paper', 'code', or a number of seconds (see opie.bot.hads.dspot).
    dspot: typing.Union[str, float] = 'paper'
    # 'interior' or 'paper' (see opie.bot.hads.checkpoint).
    checkpoints: str = 'interior'
    dump_base_s: float = 12.99
    dump_per_mb_s: float = 0.022
    # On a cloud, a run still going after hang_factor times its estimate
    # is hung: its server is deleted and it runs elsewhere, at most
    # hang_retries times more, then fails (see opie.bot.hads.executor).
    hang_factor: float = 3.0
    hang_retries: int = 1


@dataclasses.dataclass(frozen=True)
class Job:
    name: str
    deadline_s: float
    policy: Policy
    flavors: typing.Mapping[str, Flavor]
    tasks: typing.Tuple[Task, ...]

    def with_limits(self, per_flavor, max_normal):
        """The same job with every normal limit replaced.

        Used to run a job with limits that cannot bind, and by the
        benchmarks that raise the paper's quotas.
        """
        flavors = {
            name: dataclasses.replace(
                f, limits={PREEMPTIBLE: f.limits[PREEMPTIBLE],
                           NORMAL: per_flavor})
            for name, f in self.flavors.items()}
        policy = dataclasses.replace(self.policy, max_normal=max_normal)
        return dataclasses.replace(self, flavors=flavors, policy=policy)

    def normal_by_price(self):
        """The flavors, cheapest normal price first (ties by name)."""
        return tuple(sorted(self.flavors.values(),
                            key=lambda f: (f.price_h[NORMAL], f.name)))

    def slots(self, flavor):
        """How many tasks a server of ``flavor`` runs at once.

        One per vCPU, fewer when the largest tasks that fit the flavor
        would not fit its RAM together: any set of tasks uses at most what
        the same number of largest ones do, so memory stays out of every
        timing decision.  A task too big for the flavor never runs there,
        so it does not shrink the flavor's slots.
        """
        return self._slots[flavor.name]

    @functools.cached_property
    def _slots(self):
        return {f.name: _flavor_slots(f, self.tasks)
                for f in self.flavors.values()}


def _flavor_slots(flavor, tasks):
    fitting = sorted((t.memory_mb for t in tasks
                      if t.memory_mb <= flavor.ram_mb), reverse=True)
    used = 0.0
    for n, size in enumerate(fitting[:flavor.vcpus]):
        used += size
        if used > flavor.ram_mb:
            return max(1, n)
    return flavor.vcpus
