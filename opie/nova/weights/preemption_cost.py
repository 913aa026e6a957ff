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

"""PreemptionCostWeigher: prefer hosts where preemption costs least.

A host weighs minus the cost of what placing the request there would
really terminate: the cheapest set of its preemptible instances that frees
enough room (0 when the request fits). Costs come from the plugins of
``[opie] costs``. With ``[opie] ranking = all-preemptibles`` a host weighs
minus the cost of *all* its preemptibles instead, the paper's literal
Algorithm 4.

Weights are normalised over the candidate hosts: the cheapest gets
``[opie] preemption_cost_weight_multiplier``, the dearest nothing. Keep it
above the in-tree weighers' multipliers so that they only break near-ties.
Overridable per aggregate with the ``opie_preemption_cost_weight_multiplier``
metadata key. Under the stock scheduler nothing is preempted and every
host weighs 0.
"""
import nova.conf
from nova.scheduler import utils
from nova.scheduler import weights

from opie.nova.request import plan as plan_mod

CONF = nova.conf.CONF


class PreemptionCostWeigher(weights.BaseHostWeigher):

    def weight_multiplier(self, host_state):
        return utils.get_weight_multiplier(
            host_state, 'opie_preemption_cost_weight_multiplier',
            CONF.opie.preemption_cost_weight_multiplier)

    def _weigh_object(self, host_state, spec_obj):
        plan = plan_mod.current()
        if plan is None:
            return 0.0
        option = plan.option(host_state)
        return None if option is None else -option.score

    def weigh_objects(self, weighed_obj_list, spec_obj):
        plan = plan_mod.current()
        if plan is not None:
            # Nova's total weights, for the explanation of a preemption.
            plan.weighed(weighed_obj_list)
        weights = super().weigh_objects(weighed_obj_list, spec_obj)
        # A host the plan refuses (PreemptibleFilter not enabled) ranks
        # with the dearest.
        worst = min((w for w in weights if w is not None), default=0.0)
        return [worst if w is None else w for w in weights]
