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

"""Exact victim selection, checked against the literal Algorithm 5."""
import math

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from opie.core import resources as res
from opie.core import victims
from tests.unit.core import helpers

inst = helpers.inst


def _names(selection):
    return sorted(i.name for i in selection.victims)


def test_nothing_lacking_selects_nothing():
    sel = victims.select(res.ZERO, [inst('a', helpers.SMALL)], [5.0])
    assert sel.victims == () and sel.cost == 0


def test_cheapest_cover_may_take_several_small_instances():
    pool = [inst('L', helpers.LARGE), inst('s1', helpers.SMALL),
            inst('s2', helpers.SMALL), inst('m', helpers.MEDIUM)]
    sel = victims.select(helpers.LARGE, pool, [58, 10, 7, 38])
    assert _names(sel) == ['m', 's1', 's2'] and sel.cost == 55
    assert sel.freed.covers(helpers.LARGE)


def test_every_dimension_must_be_covered():
    cpu_heavy = res.Resources(4, 1000, 10)
    ram_heavy = res.Resources(1, 8000, 10)
    pool = [inst('cpu', cpu_heavy), inst('ram', ram_heavy)]
    # 'cpu' is far cheaper but lacks RAM.
    assert _names(victims.select(res.Resources(1, 4000, 0), pool,
                                 [1, 50])) == ['ram']
    # Neither alone has both: it takes the two.
    assert _names(victims.select(res.Resources(2, 4000, 0), pool,
                                 [1, 50])) == ['cpu', 'ram']


def test_normal_and_ineligible_instances_are_never_victims():
    pool = [inst('normal', helpers.LARGE, preemptible=False),
            inst('locked', helpers.LARGE, eligible=False),
            inst('ok', helpers.MEDIUM)]
    assert victims.select(helpers.LARGE, pool, [0, 0, 9]) is None
    assert _names(victims.select(helpers.MEDIUM, pool, [0, 0, 9])) == ['ok']


def test_max_victims_caps_the_set():
    pool = [inst('s%d' % n, helpers.SMALL) for n in range(4)]
    assert victims.select(helpers.LARGE, pool, [1] * 4, max_victims=3) is None
    assert len(victims.select(helpers.LARGE, pool, [1] * 4,
                              max_victims=4).victims) == 4
    assert victims.select(helpers.SMALL, pool, [1] * 4,
                          max_victims=0) is None


def test_ties_prefer_fewer_victims_then_less_leftover_then_name():
    pool = [inst('b', helpers.SMALL), inst('a', helpers.SMALL),
            inst('big', helpers.MEDIUM)]
    # 'big' alone costs the same as a+b: fewer victims wins.
    assert _names(victims.select(helpers.MEDIUM, pool, [1, 1, 2])) == ['big']
    # Same count and cost: less leftover wins (a small beats a medium).
    assert _names(victims.select(helpers.SMALL, pool, [1, 1, 1])) == ['a']
    # Everything equal: the name decides.
    assert _names(victims.select(helpers.SMALL, pool[:2], [3, 3])) == ['a']


def test_negative_costs_are_refused():
    with pytest.raises(ValueError, match='costs must be numbers >= 0'):
        victims.select(helpers.SMALL, [inst('a', helpers.SMALL)], [-1])


# --- property tests: the search equals brute force -------------------------

@st.composite
def hosts(draw, max_k=12):
    flavors = draw(st.lists(helpers.VECTORS, min_size=1, max_size=5))
    k = draw(st.integers(0, max_k))
    pool = []
    for n in range(k):
        pool.append(inst(
            'i%02d' % n, draw(st.sampled_from(flavors)),
            preemptible=draw(st.booleans()) or n % 3 == 0,
            eligible=draw(st.integers(0, 9)) > 0))
    costs = draw(st.lists(st.integers(0, 3600), min_size=k, max_size=k))
    shortfall = res.Resources(draw(st.integers(0, 24)),
                              draw(st.integers(0, 40000)),
                              draw(st.integers(0, 200)))
    max_victims = draw(st.one_of(st.none(), st.integers(0, 6)))
    return shortfall, pool, costs, max_victims


@settings(max_examples=400, deadline=None)
@given(hosts())
def test_search_equals_brute_force(case):
    shortfall, pool, costs, max_victims = case
    fast = victims.select(shortfall, pool, costs, max_victims)
    slow = victims.brute_force(shortfall, pool, costs, max_victims)
    assert (fast is None) == (slow is None)
    if fast is None:
        return
    assert math.isclose(fast.cost, slow.cost)
    # Integer costs: the deterministic tie-break picks the very same set.
    assert _names(fast) == _names(slow)
    assert fast.freed.covers(shortfall)
    assert all(v.preemptible and v.eligible for v in fast.victims)
    if max_victims is not None:
        assert len(fast.victims) <= max_victims


@settings(max_examples=200, deadline=None)
@given(hosts(), st.lists(st.floats(0, 5000), min_size=12, max_size=12))
def test_search_equals_brute_force_with_float_costs(case, float_costs):
    shortfall, pool, _, max_victims = case
    costs = float_costs[:len(pool)]
    fast = victims.select(shortfall, pool, costs, max_victims)
    slow = victims.brute_force(shortfall, pool, costs, max_victims)
    assert (fast is None) == (slow is None)
    if fast is not None:
        assert math.isclose(fast.cost, slow.cost, rel_tol=1e-9, abs_tol=1e-9)
