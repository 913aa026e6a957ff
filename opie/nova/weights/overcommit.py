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

"""OvercommitWeigher: prefer hosts where the request fits without
preemption (the paper's Algorithm 3).

A host gets -1 when the request does not fit its free room counting every
instance (h_f), 0 when it does; after Nova's normalisation a host that fits
gets ``[opie] overcommit_weight_multiplier`` more weight. Keep that above
the sum of the other weighers' multipliers, so that a preemption only
happens where no host has room. Overridable per aggregate with the
``opie_overcommit_weight_multiplier`` metadata key.
"""
import nova.conf
from nova.scheduler import utils
from nova.scheduler import weights

from opie.nova.request import host_records
from opie.nova.request import plan as plan_mod

CONF = nova.conf.CONF


class OvercommitWeigher(weights.BaseHostWeigher):
    minval = -1
    maxval = 0

    def weight_multiplier(self, host_state):
        return utils.get_weight_multiplier(
            host_state, 'opie_overcommit_weight_multiplier',
            CONF.opie.overcommit_weight_multiplier)

    def _weigh_object(self, host_state, spec_obj):
        plan = plan_mod.current()
        if plan is None:
            fits = host_records.fits_host_state(host_state, spec_obj)
        else:
            fits = plan.fits(host_state)
        return 0 if fits else -1
