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

"""A normal request takes from the lowest tier first, across hosts: the
plan reorders Nova's weighed hosts so that no weight puts a host whose
victims are of a higher tier before one whose are of a lower tier; a tier
is an order, not a bar: a higher one serves where no lower one frees
enough."""
import dataclasses

from opie.core import costs
from opie.core import scheduling
from opie.nova.request import plan as plan_mod
from tests.functional.plugin import cloud as cloud_mod
from tests.functional.plugin.cloud import spec
from tests.functional.plugin.cloud import victim
from tests.unit.core import helpers


def _tiered(name, tier, *minutes):
    return dict(preemptibles=[
        dataclasses.replace(victim('%s%d' % (name, i), minutes=m), tier=tier)
        for i, m in enumerate(minutes)])


def test_a_lower_tier_host_goes_first_even_when_its_victims_cost_more(
        cloud):
    cloud = (cloud.host('cheap-tier1', **_tiered('c', 1, 60, 60, 60, 60))
             .host('dear-tier0', **_tiered('d', 0, 40, 41, 42, 43))
             .host('dearer-tier0', **_tiered('e', 0, 50, 51, 52, 53))
             .host('free'))
    request_spec = spec('medium')
    with plan_mod.activated(cloud.plan(request_spec)) as plan:
        states = cloud.host_states()
        weighed = cloud_mod.ranking(states, request_spec)
        # The weighers alone would take the free tier-1 victim first.
        assert weighed == ['free', 'cheap-tier1', 'dear-tier0',
                           'dearer-tier0']
        by_name = {s.host: s for s in states}
        ordered = plan.lowest_tier_first([by_name[n] for n in weighed])
    assert [s.host for s in ordered] == ['free', 'dear-tier0',
                                         'dearer-tier0', 'cheap-tier1']


def test_a_host_the_request_fits_goes_before_any_preemption(cloud):
    # Whatever Nova's weights say (an aggregate's overcommit multiplier
    # set low), as scheduling.order, the dry run, says (found by review).
    full = [victim('v%d' % i, minutes=40 + i) for i in range(4)]
    cloud = cloud.host('tier0', preemptibles=full).host('roomy')
    with plan_mod.activated(cloud.plan(spec('medium'))) as plan:
        by_name = {s.host: s for s in cloud.host_states()}
        ordered = plan.lowest_tier_first([by_name['tier0'],
                                          by_name['roomy']])
    core = scheduling.schedule(
        scheduling.Request(helpers.MEDIUM),
        [helpers.paper_host(n, cloud.instances[n]) for n in ('tier0',
                                                             'roomy')],
        costs.load_cost_model('period'), helpers.NOW)
    assert core.host == 'roomy'
    assert [s.host for s in ordered][0] == core.host


def test_a_higher_tier_goes_only_where_no_lower_one_frees_enough(cloud):
    # bronze: normal servers and one tier-0 victim, too small a room for a
    # large server; gold: tier-1 victims only, the two cheapest enough.
    cloud = (cloud.host('gold', **_tiered('g', 1, 61, 62, 63, 64))
             .host('bronze', normal=helpers.LARGE + helpers.MEDIUM,
                   **_tiered('b', 0, 110)))
    request_spec = spec('large')
    with plan_mod.activated(cloud.plan(request_spec)) as plan:
        states = cloud.host_states()
        passing = cloud_mod.passing(states, request_spec)
        by_name = {s.host: s for s in states}
        victims = [v.name for v in plan.option(by_name['gold']).victims]
    assert passing == ['gold']
    assert victims == ['g0', 'g1']
