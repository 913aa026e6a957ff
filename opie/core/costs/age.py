"""Age: the cost of a victim is how long it has run.

Kills the youngest instances first, which loses the least work for tenants
whose jobs do not checkpoint. Unit: seconds.
"""
from opie.core.costs import base


class AgeCost(base.Cost):
    name = 'age'

    def instance_cost(self, instance, host, now):
        return instance.run_time(now)
