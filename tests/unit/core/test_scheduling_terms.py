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

"""One decision under the operator's terms: tiers across hosts, minimum
uptime and budgets, and the reasons a host is refused for them."""
import dataclasses
import datetime

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from opie.core import budgets as budgets_mod
from opie.core import costs
from opie.core import host as host_mod
from opie.core import resources as res
from opie.core import scheduling
from opie.core import victims
from tests.unit.core import helpers

PERIOD = costs.load_cost_model('period')
NOW = helpers.NOW
S, M, L = helpers.SMALL, helpers.MEDIUM, helpers.LARGE
DAY = 86400.0


def inst(name, resources, minutes=30, tier=0, project='p', uptime=0.0,
         preemptible=True):
    return dataclasses.replace(
        helpers.inst(name, resources, minutes, preemptible=preemptible),
        tier=tier, project_id=project, minimum_uptime=uptime)


def full_host(name, *preemptibles):
    """A paper host (8 vCPU) with one large normal server and the rest
    preemptible: a large request needs 4 vCPUs of victims."""
    return helpers.paper_host(
        name, [inst(name + '-n', L, preemptible=False)] + list(preemptibles))


def test_a_host_with_lower_tier_victims_wins_over_cheaper_higher_tier_ones():
    # The period cost of a victim 30 min into its hour is dearer than one
    # 2 min in: 'cheap' would win on cost alone.
    cheap = full_host('cheap', inst('c', L, 62, tier=1))
    dear = full_host('dear', inst('d', L, 30, tier=0))
    decision = scheduling.schedule(scheduling.Request(L), [cheap, dear],
                                   PERIOD, NOW)
    assert decision.ranking[0].cost > decision.ranking[1].cost
    assert decision.host == 'dear' and decision.ranking[0].tier == 0
    assert [o.tier for o in decision.ranking] == [0, 1]


def test_a_host_that_fits_still_comes_before_any_preemption():
    roomy = helpers.paper_host('roomy', [inst('p', L, tier=5)])
    tier0 = full_host('tier0', inst('v', L))
    decision = scheduling.schedule(scheduling.Request(L), [tier0, roomy],
                                   PERIOD, NOW)
    assert decision.host == 'roomy' and decision.victims == ()


def test_a_request_only_too_young_victims_could_serve_says_so():
    young = full_host('young', inst('y', L, minutes=5, uptime=600))
    decision = scheduling.schedule(scheduling.Request(L), [young], PERIOD,
                                   NOW)
    assert decision.host is None
    assert scheduling.TOO_YOUNG in decision.reason


def test_a_request_only_a_spent_budget_could_serve_says_so():
    host = full_host('h', inst('a1', M, project='a'),
                     inst('a2', M, project='a'))
    limits = budgets_mod.Budgets(DAY, {'a': 2 * 30})
    option, why = scheduling.assess_host(scheduling.Request(L), host, PERIOD,
                                         NOW, budgets=limits)
    assert option is None and why == scheduling.OVER_BUDGET
    option, why = scheduling.assess_host(
        scheduling.Request(L), host, PERIOD, NOW,
        budgets=budgets_mod.Budgets(DAY, {'a': 4 * 30}))
    assert why == '' and option.charges == {'a': 120}
    # With a victim cap as well, the budget is named when it is the cause.
    assert scheduling.assess_host(scheduling.Request(L), host, PERIOD, NOW,
                                  max_victims=2, budgets=limits) == (
        None, scheduling.OVER_BUDGET)
    assert scheduling.assess_host(
        scheduling.Request(L), host, PERIOD, NOW, max_victims=1,
        budgets=budgets_mod.Budgets(DAY, {'a': 1000})) == (
        None, scheduling.TOO_MANY_VICTIMS)


def test_a_preemptible_request_of_any_tier_preempts_nothing():
    host = helpers.paper_host('h', [inst('p%d' % n, M, tier=0)
                                    for n in range(4)])
    decision = scheduling.schedule(scheduling.Request(M, preemptible=True),
                                   [host], PERIOD, NOW)
    assert decision.host is None and decision.victims == ()


# --- the decision equals brute force over every host ----------------------

@st.composite
def clouds(draw):
    hosts = []
    for h in range(draw(st.integers(1, 4))):
        preemptibles = [
            inst('h%d-%d' % (h, n), draw(st.sampled_from([S, M, L])),
                 minutes=draw(st.integers(0, 200)),
                 tier=draw(st.integers(0, 2)),
                 project=draw(st.sampled_from('ab')),
                 uptime=draw(st.sampled_from([0, 0, 600])))
            for n in range(draw(st.integers(0, 7)))]
        hosts.append(full_host('h%d' % h, *preemptibles))
    limits = budgets_mod.Budgets(DAY, draw(st.dictionaries(
        st.sampled_from('ab'), st.integers(0, 600))))
    return hosts, draw(st.sampled_from([S, M, L])), limits


def _brute(request, hosts, limits):
    """Every host's best set by brute force, then the lowest (tier, cost,
    host)."""
    best = None
    for host in hosts:
        shortfall = host.free_full.shortfall(request)
        prices = PERIOD.costs(host.preemptibles, host, NOW)
        found = victims.brute_force(shortfall, host.preemptibles, prices,
                                    None, host.capacity, NOW, limits)
        if found is None:
            continue
        key = (not shortfall.is_zero() and bool(found.victims), found.tier,
               round(found.cost, 6), host.name)
        if best is None or key < best[0]:
            best = (key, host.name, found)
    return best


@settings(max_examples=200, deadline=None)
@given(clouds())
def test_the_decision_equals_brute_force_across_hosts(cloud):
    hosts, flavor, limits = cloud
    decision = scheduling.schedule(scheduling.Request(flavor), hosts, PERIOD,
                                   NOW, budgets=limits)
    expected = _brute(flavor, hosts, limits)
    if expected is None:
        assert decision.host is None
        return
    _, host, found = expected
    assert decision.host == host
    assert sorted(v.name for v in decision.victims) == sorted(
        v.name for v in found.victims)
    assert res.total(v.resources for v in decision.victims) == found.freed


# --- a refusal names what stands in the way (found by review) -------------

def _tight(*preemptibles, capacity=res.Resources(2, 4096, 40)):
    """A host exactly full of ``preemptibles``."""
    return host_mod.Host.from_instances('h', capacity, list(preemptibles))


def _why(request, host, now=NOW, **kwargs):
    return scheduling.assess_host(scheduling.Request(request), host, PERIOD,
                                  now, **kwargs)[1]


def test_waiting_is_not_suggested_when_the_victim_cap_refuses_anyway():
    host = _tight(inst('old', S, minutes=60, uptime=600),
                  inst('young', S, minutes=5, uptime=600))
    assert _why(S + S, host, max_victims=1) == (
        'freeing enough breaks the minimum uptime of younger preemptibles '
        'and max_victims')
    later = NOW + datetime.timedelta(minutes=10)
    assert _why(S + S, host, later, max_victims=1) == (
        scheduling.TOO_MANY_VICTIMS)


def test_waiting_is_not_suggested_when_the_budget_refuses_anyway():
    host = _tight(inst('old', S, minutes=60, project='a'),
                  inst('young', S, minutes=5, project='a', uptime=600))
    limits = budgets_mod.Budgets(DAY, {'a': 60})
    assert _why(S + S, host, budgets=limits) == (
        "freeing enough breaks the minimum uptime of younger preemptibles "
        "and a project's preemption budget")


def test_every_constraint_whose_lifting_alone_would_serve_is_named():
    young = inst('young', L, minutes=5, uptime=600)
    olds = [inst('o%d' % n, S, minutes=60) for n in range(4)]
    host = _tight(young, *olds, capacity=res.Resources(8, 16384, 160))
    assert _why(res.Resources(3, 1, 1), host, max_victims=2) == (
        'freeing enough breaks the minimum uptime of younger preemptibles '
        'or max_victims')
    later = NOW + datetime.timedelta(minutes=10)
    option, _ = scheduling.assess_host(
        scheduling.Request(res.Resources(3, 1, 1)), host, PERIOD, later,
        max_victims=2)
    assert [v.name for v in option.victims] == ['young']
