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

"""A host seen twice: h_f with every instance, h_n without preemptibles.

The OPIE paper (section 3.1) filters a normal request on h_n, the host as if
its preemptible instances did not exist, and a preemptible one on h_f, the
host as it really is. Capacity is what a scheduler may hand out, as Placement
counts it: ``(total - reserved) * allocation_ratio`` in each dimension.
"""
import dataclasses
import datetime

from opie.core import resources as res


@dataclasses.dataclass(frozen=True)
class Instance:
    """An instance as the core needs it.

    ``eligible`` is False for a preemptible that cannot be preempted right
    now (a task in progress, locked, being migrated or resized); such an
    instance still occupies h_f but is never a victim. Its flavor's terms
    add two hard constraints: a preemptible younger than its
    ``minimum_uptime`` is never a victim (:meth:`protected`), and a normal
    request takes victims of a higher ``tier`` only where the lower tiers
    cannot free enough. ``project_id`` is its owner's, whose preemption
    budget it spends (:mod:`.budgets`).
    """
    uuid: str
    resources: res.Resources
    preemptible: bool
    launched_at: datetime.datetime | None = None
    eligible: bool = True
    name: str = ''
    # Nova's task state (None: no task), for the reconciler, which tells a
    # move in progress from a victim left running.
    task_state: str | None = None
    project_id: str = ''
    tier: int = 0
    minimum_uptime: float = 0.0
    # When Nova created it (None: launched_at stands in). A minimum uptime
    # counts from then: Nova sets launched_at anew on a rescue, rebuild,
    # resize or unshelve, which its owner could repeat to stay young.
    created_at: datetime.datetime | None = None
    # Seconds of notice it is given before it stops, as a victim
    # (opie.nova.request.notice): how it is terminated, not whether it is
    # chosen.
    notice: int = 0

    def __post_init__(self):
        # Nova hands out naive UTC datetimes, snapshots aware ones.
        for field in ('launched_at', 'created_at'):
            moment = getattr(self, field)
            if moment is not None:
                object.__setattr__(self, field, utc(moment))

    def run_time(self, now):
        """Seconds since launch (0 for an instance not launched yet)."""
        if self.launched_at is None:
            return 0.0
        seconds = (utc(now) - self.launched_at).total_seconds()
        # One launched after ``now`` by this clock (clocks differ between
        # hosts) has not run yet.
        return seconds if seconds > 0.0 else 0.0

    def protected(self, now):
        """Is it younger than its minimum uptime (never a victim now)?
        One created after ``now`` by this clock (clocks differ between
        hosts) is, as long as the difference lasts."""
        if self.minimum_uptime <= 0:
            return False
        born = self.created_at or self.launched_at
        if born is None:
            return True
        age = (utc(now) - born).total_seconds()
        return age < self.minimum_uptime


def utc(moment):
    """``moment`` as an aware UTC datetime (naive ones are taken as UTC)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=datetime.timezone.utc)
    return moment


def capacity(total, allocation_ratio=None, reserved=None):
    """Schedulable capacity, as Placement computes it from inventory."""
    ratio = allocation_ratio or res.Resources(1.0, 1.0, 1.0)
    reserved = reserved or res.ZERO
    free = total - reserved
    return res.Resources(free.vcpus * ratio.vcpus,
                         free.memory_mb * ratio.memory_mb,
                         free.disk_gb * ratio.disk_gb)


def inventory_capacity(inventory):
    """Placement's capacity of one inventory record (0 when there is none):
    reserved and allocation ratio default as in Placement."""
    if not inventory:
        return 0
    return ((inventory['total'] - inventory.get('reserved', 0))
            * inventory.get('allocation_ratio', 1.0))


@dataclasses.dataclass(frozen=True)
class Host:
    """One compute host: capacity, what normal instances use, preemptibles.

    ``normal_used`` is h_n's usage. The preemptibles add up to the rest of
    h_f's usage; an ineligible preemptible still counts there. The free
    room of each view is worked out once, when the host is made: a request
    asks for it several times, on every host.
    """
    name: str
    capacity: res.Resources
    normal_used: res.Resources
    preemptibles: tuple = ()
    # What every instance takes: h_f's usage.
    full_used: res.Resources = dataclasses.field(init=False, repr=False,
                                                 compare=False)
    # h_f free room: capacity less every instance.
    free_full: res.Resources = dataclasses.field(init=False, repr=False,
                                                 compare=False)
    # h_n free room: capacity less normal instances only.
    free_normal: res.Resources = dataclasses.field(init=False, repr=False,
                                                   compare=False)
    # What the preemptibles take together, where the caller has added
    # them up already (None: added up here). Trusted: it must be the total
    # of ``preemptibles``.
    listed: dataclasses.InitVar[res.Resources | None] = None

    def __post_init__(self, listed):
        if listed is None:
            listed = res.total(i.resources for i in self.preemptibles)
        full_used = self.normal_used + listed
        object.__setattr__(self, 'full_used', full_used)
        object.__setattr__(self, 'free_full', self.capacity - full_used)
        object.__setattr__(self, 'free_normal',
                           self.capacity - self.normal_used)

    @classmethod
    def from_instances(cls, name, capacity, instances):
        normal = res.total(i.resources for i in instances
                           if not i.preemptible)
        return cls(name, capacity, normal,
                   tuple(i for i in instances if i.preemptible))
