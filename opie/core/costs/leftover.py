"""Leftover: free as little more than the request needs.

The wasted room of a victim set is what it frees beyond the shortfall, each
dimension as a fraction of the host's capacity, summed over vCPU, RAM and
disk. Because a set frees the sum of its members, that is a per-instance
sum (each victim's share of the host) less a constant (the shortfall's
share), so the search stays exact. Unitless: 1.0 is a whole host dimension.
"""
from opie.core.costs import base


class LeftoverCost(base.Cost):
    name = 'leftover'

    def instance_cost(self, instance, host, now):
        return instance.resources.share(host.capacity)

    def offset(self, shortfall, host):
        return -shortfall.share(host.capacity)
