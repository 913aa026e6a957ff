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
