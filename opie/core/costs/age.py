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

"""Age: the cost of a victim is how long it has run.

Kills the youngest instances first, which loses the least work for tenants
whose jobs do not checkpoint. Unit: seconds.
"""
from opie.core.costs import base


class AgeCost(base.Cost):
    name = 'age'

    def instance_cost(self, instance, host, now):
        return instance.run_time(now)
