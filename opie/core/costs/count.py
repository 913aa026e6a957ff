"""Victim count: every preempted instance costs 1.

Alone it kills as few instances as possible; with a multiplier beside
``period`` it adds a fixed price per victim (e.g. ``count=60`` counts each
victim as one extra minute of lost billing).
"""
from opie.core.costs import base


class CountCost(base.Cost):
    name = 'count'

    def instance_cost(self, instance, host, now):
        return 1.0
