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

"""The hard constraints of the victim search: tiers, minimum uptime and
preemption budgets, checked by hand and against brute force."""
import dataclasses
import datetime
import math

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from opie.core import budgets as budgets_mod
from opie.core import resources as res
from opie.core import victims
from tests.unit.core import helpers

NOW = helpers.NOW
HOUR = 3600.0


def inst(name, resources, minutes=60, tier=0, project='p', uptime=0.0,
         **kwargs):
    return dataclasses.replace(
        helpers.inst(name, resources, minutes, **kwargs), tier=tier,
        project_id=project, minimum_uptime=uptime)


def _names(selection):
    return sorted(i.name for i in selection.victims)


def budgets(window=24 * HOUR, **remaining):
    return budgets_mod.Budgets(window, remaining)


# --- tiers -----------------------------------------------------------------

def test_a_lower_tier_is_taken_first_even_when_dearer():
    pool = [inst('t1', helpers.LARGE, tier=1), inst('t0', helpers.LARGE)]
    sel = victims.select(helpers.LARGE, pool, [1, 50], now=NOW)
    assert _names(sel) == ['t0'] and sel.tier == 0 and sel.cost == 50


def test_a_higher_tier_only_when_the_lower_ones_cannot_free_enough():
    pool = [inst('t0', helpers.SMALL), inst('t2', helpers.MEDIUM, tier=2),
            inst('t1', helpers.MEDIUM, tier=1)]
    sel = victims.select(helpers.LARGE, pool, [1, 1, 9], now=NOW)
    # Tiers 0 and 1 together free 3 vCPUs of 4: tier 2 is needed, and then
    # the cheapest set of tiers 0 to 2 is taken.
    assert sel.tier == 2 and _names(sel) == ['t1', 't2'] and sel.cost == 10
    sel = victims.select(helpers.MEDIUM, pool, [1, 1, 9], now=NOW)
    assert sel.tier == 1 and _names(sel) == ['t1']


# --- minimum uptime --------------------------------------------------------

def test_a_preemptible_younger_than_its_minimum_uptime_is_never_a_victim():
    young = inst('young', helpers.LARGE, minutes=5, uptime=600)
    old = inst('old', helpers.LARGE, minutes=11, uptime=600)
    assert young.protected(NOW) and not old.protected(NOW)
    assert victims.select(helpers.LARGE, [young], [0], now=NOW) is None
    assert _names(victims.select(helpers.LARGE, [young, old], [0, 99],
                                 now=NOW)) == ['old']


def test_a_preemptible_never_launched_is_protected_by_a_minimum_uptime():
    never = dataclasses.replace(inst('new', helpers.SMALL, uptime=1),
                                launched_at=None)
    assert never.protected(NOW)
    assert victims.select(helpers.SMALL, [never], [0], now=NOW) is None


def test_the_search_protects_exactly_whom_protected_says():
    # The pool asks protected() only where a minimum uptime is set: in its
    # own terms, down to a minimum uptime that is not a number.
    for uptime in (0.0, -0.0, -5.0, 600.0, math.inf, -math.inf, math.nan):
        for launched in (NOW - datetime.timedelta(minutes=5), None,
                         NOW + datetime.timedelta(minutes=5)):
            one = dataclasses.replace(inst('one', helpers.SMALL,
                                           uptime=uptime),
                                      launched_at=launched)
            taken = victims.select(helpers.SMALL, [one], [0], now=NOW)
            assert (taken is None) == one.protected(NOW), (uptime, launched)


# --- budgets ---------------------------------------------------------------

def test_a_charge_is_vcpu_minutes_of_run_time_capped_at_the_window():
    four = inst('four', res.Resources(4, 8000, 80), minutes=90)
    assert budgets_mod.charge(four, NOW, 24 * HOUR) == 4 * 90
    # A second started counts as a minute.
    assert budgets_mod.charge(
        dataclasses.replace(four, launched_at=NOW - datetime.timedelta(
            seconds=61)), NOW, HOUR) == 4 * 2
    # Work older than the window is not counted again.
    assert budgets_mod.charge(four, NOW, HOUR) == 4 * 60


def test_a_project_is_never_charged_beyond_its_budget():
    pool = [inst('a1', helpers.SMALL, project='a'),
            inst('a2', helpers.SMALL, project='a'),
            inst('b1', helpers.SMALL, project='b')]
    # Each small server ran 60 min: 60 vCPU-minutes each; a may lose 100.
    sel = victims.select(helpers.MEDIUM, pool, [1, 1, 50], now=NOW,
                         budgets=budgets(a=100))
    assert _names(sel) == ['a1', 'b1'] and sel.charges == {'a': 60, 'b': 60}
    assert victims.select(helpers.MEDIUM, pool, [1, 1, 50], now=NOW,
                          budgets=budgets(a=120)).charges == {'a': 120}
    assert victims.select(helpers.LARGE, pool, [1, 1, 50], now=NOW,
                          budgets=budgets(a=100)) is None


def test_a_project_without_a_budget_is_unlimited():
    pool = [inst('a1', helpers.SMALL, project='a')]
    assert victims.select(helpers.SMALL, pool, [1], now=NOW,
                          budgets=budgets(other=0)).victims == (pool[0],)
    assert victims.select(helpers.SMALL, pool, [1], now=NOW,
                          budgets=budgets(a=0)) is None


def test_spending_leaves_less_for_the_next_instance_of_the_request():
    spent = budgets(a=100, b=5).spent({'a': 60, 'c': 10})
    assert spent.limit('a') == 40 and spent.limit('b') == 5
    assert spent.limit('c') is None


# --- the search equals brute force with every constraint on ---------------

@st.composite
def constrained_hosts(draw, max_k=11):
    flavors = draw(st.lists(helpers.VECTORS, min_size=1, max_size=4))
    k = draw(st.integers(0, max_k))
    pool = [inst('i%02d' % n, draw(st.sampled_from(flavors)),
                 minutes=draw(st.sampled_from([0, 1, 5, 30, 61, 600, 3000])),
                 tier=draw(st.integers(0, 2)),
                 project=draw(st.sampled_from('abc')),
                 uptime=draw(st.sampled_from([0, 0, 120, 1800])),
                 preemptible=draw(st.booleans()) or n % 3 == 0,
                 eligible=draw(st.integers(0, 9)) > 0)
            for n in range(k)]
    costs = draw(st.lists(st.integers(0, 50), min_size=k, max_size=k))
    shortfall = res.Resources(draw(st.integers(0, 24)),
                              draw(st.integers(0, 40000)),
                              draw(st.integers(0, 200)))
    max_victims = draw(st.one_of(st.none(), st.integers(0, 6)))
    remaining = draw(st.dictionaries(st.sampled_from('abc'),
                                     st.integers(0, 3000)))
    window = draw(st.sampled_from([HOUR, 24 * HOUR]))
    return (shortfall, pool, costs, max_victims,
            budgets_mod.Budgets(window, remaining))


@settings(max_examples=500, deadline=None)
@given(constrained_hosts())
def test_search_equals_brute_force_with_tiers_uptime_and_budgets(case):
    shortfall, pool, costs, max_victims, limits = case
    fast = victims.select(shortfall, pool, costs, max_victims, now=NOW,
                          budgets=limits)
    slow = victims.brute_force(shortfall, pool, costs, max_victims, now=NOW,
                               budgets=limits)
    assert (fast is None) == (slow is None)
    if fast is None:
        return
    assert fast.tier == slow.tier
    assert math.isclose(fast.cost, slow.cost)
    assert _names(fast) == _names(slow)
    assert fast.freed.covers(shortfall)
    assert not any(v.protected(NOW) for v in fast.victims)
    for project, charged in fast.charges.items():
        limit = limits.limit(project)
        assert limit is None or charged <= limit
    assert fast.charges == slow.charges


def test_brute_force_checks_what_it_is_the_reference_for():
    # The oracle itself: a budget of 0 and a minimum uptime each leave
    # only the other instance; tiers pick the lower one.
    young = inst('young', helpers.SMALL, minutes=1, uptime=600)
    spent = inst('spent', helpers.SMALL, project='x')
    high = inst('high', helpers.SMALL, tier=3)
    pool = [young, spent, high]
    sel = victims.brute_force(helpers.SMALL, pool, [0, 0, 0], now=NOW,
                              budgets=budgets(x=0))
    assert _names(sel) == ['high'] and sel.tier == 3
    sel = victims.brute_force(helpers.SMALL, pool, [0, 0, 0], now=NOW,
                              budgets=budgets())
    assert _names(sel) == ['spent'] and sel.tier == 0


# --- bounded under budgets (found by review) -------------------------------

ONE = res.Resources(1, 1024, 10)


def test_a_binding_budget_is_bounded_before_the_search_enumerates():
    # k one-vCPU instances of one project, each of a different charge; the
    # budget pays for any k/2 of them, never k/2 + 1, and k/2 + 1 are
    # needed. Without a budget-aware bound the search enumerated every
    # allowed set (5.9 s of CPU at k = 24, days at k = 40).
    k = 40
    pool = [inst('v%02d' % n, ONE, minutes=1000 + n) for n in range(k)]
    charges = sorted(budgets_mod.charge(i, NOW, 24 * HOUR) for i in pool)
    limits = budgets(p=sum(charges[-(k // 2):]))
    search = victims._Search(res.Resources(k // 2 + 1, 0, 0), [
        (1.0 + 0.001 * n, i.name, i, budgets_mod.charge(i, NOW, 24 * HOUR))
        for n, i in enumerate(pool)], None, res.total(
            i.resources for i in pool), limits)
    assert search.run() is None and search.nodes <= 1


def test_many_budgets_each_allowing_one_victim_are_searched_exactly():
    # 32 projects of two instances, each budget paying for one of them;
    # the need takes one from every project: the charge-aware cost bound
    # proves the greedy set optimal at once.
    pool, remaining = [], {}
    for p in range(32):
        pair = [inst('p%02d-%d' % (p, m), ONE, minutes=50 + 2 * p + m,
                     project='p%02d' % p) for m in range(2)]
        pool += pair
        remaining['p%02d' % p] = max(budgets_mod.charge(i, NOW, 24 * HOUR)
                                     for i in pair)
    prices = [1.0 + 0.001 * n for n in range(len(pool))]
    found = victims.select(res.Resources(32, 0, 0), pool, prices, now=NOW,
                           budgets=budgets(**remaining))
    assert found.exact and len(found.victims) == 32
    assert _names(found) == sorted('p%02d-0' % p for p in range(32))


def test_a_search_past_its_node_limit_keeps_every_constraint(monkeypatch):
    # Stopped at once, the search keeps the greedy set it was seeded
    # with: within the budget, and said to be maybe not the cheapest.
    monkeypatch.setattr(victims, 'MAX_NODES', 0)
    pool = [inst('s%d' % n, helpers.SMALL, project='a') for n in range(6)]
    found = victims.select(helpers.SMALL + helpers.SMALL + helpers.SMALL,
                           pool, [5, 4, 3, 2, 1, 0], now=NOW,
                           budgets=budgets(a=200))
    assert not found.exact and found.charges == {'a': 180}
    assert _names(found) == ['s3', 's4', 's5']


def test_a_fraction_of_a_vcpu_is_charged_in_full_minutes():
    half = inst('half', res.Resources(0.5, 512, 10), minutes=60)
    assert budgets_mod.charge(half, NOW, 24 * HOUR) == 30
    assert victims.select(half.resources, [half], [1.0], now=NOW,
                          budgets=budgets(p=0)) is None


def test_a_launch_after_now_by_this_clock_is_charged_a_minute():
    # A compute whose clock runs ahead wrote launched_at in the
    # scheduler's future: still charged, so no skew escapes a budget.
    ahead = dataclasses.replace(
        inst('ahead', res.Resources(8, 16384, 80)),
        launched_at=NOW + datetime.timedelta(minutes=10))
    assert budgets_mod.charge(ahead, NOW, 24 * HOUR) == 8


def test_minimum_uptime_counts_from_creation_not_from_the_last_launch():
    # Nova sets launched_at anew on a rescue (or rebuild, resize,
    # unshelve): its owner could repeat one to stay young for ever.
    rescued = dataclasses.replace(
        inst('rescued', helpers.SMALL, minutes=1, uptime=600),
        created_at=NOW - datetime.timedelta(hours=2))
    assert not rescued.protected(NOW)
    assert _names(victims.select(helpers.SMALL, [rescued], [0],
                                 now=NOW)) == ['rescued']
    # Created "after" now by this clock: protected while that lasts.
    early = dataclasses.replace(rescued, created_at=NOW + datetime.timedelta(
        minutes=30))
    assert early.protected(NOW + datetime.timedelta(minutes=35))
