"""Partial billing period: the paper's Algorithm 4 (the default cost).

Providers that bill by whole periods (one hour by default) are not paid for
the partial period of an instance they kill, so the cheapest victim is the
one with the least time run since its last period boundary: ``run_time mod
period``. Tune the period with ``[opie] billing_period`` (or ``opie-manage
plan --period-seconds``). Unit: seconds.
"""
from opie.core.costs import base


class PeriodCost(base.Cost):
    name = 'period'

    def instance_cost(self, instance, host, now):
        return instance.run_time(now) % self.period_seconds
