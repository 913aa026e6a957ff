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

"""Preemption budgets: how much of a project's work OPIE may destroy.

An operator gives a project (or every project, by default) a budget of
*preempted vCPU-hours in a rolling window*: the preemptions of the project's
servers in the last ``window`` seconds may together charge at most that
much. A preemption charges what it destroys at worst, the work its victim
did, counted within the window: its vCPUs times its run time, the run time
capped at the window (work older than the window is not charged again),
rounded up to whole vCPU-minutes. Charges are integers so that the victim
search here and Placement, which keeps the ledger and counts integers,
agree to the unit.

A budget is a hard constraint of the victim search (:mod:`.victims`): no
set whose charges break one is ever chosen, however cheap, and a request
only such a set could serve fails saying so. :class:`Budgets` is what is
left of each budget at the moment of a decision.
"""
import dataclasses
import math
import types

MINUTE = 60.0


def charge(instance, now, window):
    """vCPU-minutes a preemption of ``instance`` at ``now`` charges."""
    minutes = math.ceil(min(instance.run_time(now), window) / MINUTE)
    # Whole vCPUs in Nova; a snapshot's fractions are rounded up.
    return math.ceil(instance.resources.vcpus * minutes)


@dataclasses.dataclass(frozen=True)
class Budgets:
    """What each budget still allows: ``remaining`` maps a project to the
    vCPU-minutes it may still be charged; a project absent has no budget."""
    window: float
    remaining: types.MappingProxyType = dataclasses.field(
        default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, 'remaining',
                           types.MappingProxyType(dict(self.remaining)))

    def charge(self, instance, now):
        return charge(instance, now, self.window)

    def limit(self, project):
        """vCPU-minutes ``project`` may still be charged (None: no
        budget)."""
        return self.remaining.get(project)

    def spent(self, charges):
        """These budgets once ``charges`` (project -> vCPU-minutes) are
        spent: for the next instance of the same request."""
        left = dict(self.remaining)
        for project, amount in charges.items():
            if project in left:
                left[project] = max(0, left[project] - amount)
        return Budgets(self.window, left)
