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
