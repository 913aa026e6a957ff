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

"""How OPIE's weighers rank hosts, run by Nova's weight handler.

With the plan current, a host the request fits comes first (the
overcommit weigher), then hosts by the cost of what would be terminated
there: the cheapest sufficient victim set by default, the cost of *all*
their preemptibles with ``[opie] ranking = all-preemptibles`` (the paper's
literal Algorithm 4). With no plan (the stock scheduler, safe mode) only
fitting counts.
"""
from nova.scheduler import weights as nova_weights

from opie.core import scheduling
from opie.nova.request import plan as plan_mod
from opie.nova.weights import preemption_cost
from tests.functional.plugin import cloud as cloud_mod
from tests.functional.plugin.cloud import spec
from tests.functional.plugin.cloud import victim


def _full(name, *minutes):
    """A host full of four medium preemptibles that ran ``minutes``."""
    return dict(preemptibles=[victim('%s%d' % (name, i), minutes=m)
                              for i, m in enumerate(minutes)])


def _cloud(cloud):
    # dear: its cheapest victim costs 40 minutes, all of them 166;
    # cheap: 5 minutes, all of them 182; lossless: 0 (a victim at the end
    # of its billing period), but it must preempt where free need not.
    return (cloud.host('dear', **_full('d', 40, 41, 42, 43))
            .host('cheap', **_full('c', 5, 59, 59, 59))
            .host('lossless', **_full('l', 60, 60, 60, 60)).host('free'))


def _ranking(cloud, request_spec):
    with plan_mod.activated(cloud.plan(request_spec)):
        return cloud_mod.ranking(cloud.host_states(), request_spec)


def test_free_room_first_then_the_cheapest_victims(cloud):
    assert _ranking(_cloud(cloud), spec('medium')) == [
        'free', 'lossless', 'cheap', 'dear']


def test_the_papers_algorithm_4_ranks_by_all_preemptibles(cloud,
                                                          opie_options):
    opie_options(ranking=scheduling.ALL_PREEMPTIBLES)

    assert _ranking(_cloud(cloud), spec('medium')) == [
        'free', 'lossless', 'dear', 'cheap']


def test_a_host_the_plan_refuses_weighs_as_the_dearest(cloud):
    """(PreemptibleFilter left out of enabled_filters.)"""
    cloud.host('dear', **_full('d', 40, 41, 42, 43))
    cloud.host('refused', **_full('r', 1, 1, 1, 1), token=False)
    cloud.host('cheap', **_full('c', 5, 59, 59, 59))
    weigher = preemption_cost.PreemptionCostWeigher()
    hosts = [nova_weights.WeighedHost(h, 0.0)
             for h in cloud.host_states()]

    with plan_mod.activated(cloud.plan(spec('medium'))):
        weights = weigher.weigh_objects(hosts, spec('medium'))

    assert weights == [-40 * 60.0, -40 * 60.0, -5 * 60.0]


def test_without_a_plan_only_free_room_counts(cloud):
    """The stock scheduler and safe mode: nothing is preempted, so no
    preemption costs anything."""
    _cloud(cloud)
    hosts = [nova_weights.WeighedHost(h, 0.0)
             for h in cloud.host_states()]

    assert cloud_mod.ranking(cloud.host_states(), spec('medium'))[0] == 'free'
    assert preemption_cost.PreemptionCostWeigher().weigh_objects(
        hosts, spec('medium')) == [0.0, 0.0, 0.0, 0.0]
