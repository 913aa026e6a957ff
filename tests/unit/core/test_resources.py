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

from opie.core import host
from opie.core import resources as res
from tests.unit.core import helpers


def test_arithmetic_and_cover():
    a = res.Resources(2, 4000, 40)
    b = res.Resources(1, 2000, 20)
    assert a + b == res.Resources(3, 6000, 60)
    assert a - b == b
    assert a.covers(b) and not b.covers(a)
    assert b * 2 == a
    assert res.total([a, b, b]) == res.Resources(4, 8000, 80)


def test_shortfall_is_per_dimension_and_never_negative():
    free = res.Resources(3, 1000, 500)
    assert free.shortfall(res.Resources(2, 4000, 40)) == res.Resources(
        0, 3000, 0)
    assert free.shortfall(res.Resources(1, 1, 1)).is_zero()


def test_capacity_follows_placement_formula():
    cap = host.capacity(res.Resources(8, 16384, 100),
                        res.Resources(4.0, 1.5, 1.0),
                        res.Resources(0, 512, 0))
    assert cap == res.Resources(32, (16384 - 512) * 1.5, 100)


def test_host_states_h_f_and_h_n():
    h = helpers.paper_host('h', [
        helpers.inst('n1', helpers.LARGE, preemptible=False),
        helpers.inst('p1', helpers.MEDIUM),
        helpers.inst('p2', helpers.SMALL, eligible=False)])
    assert h.normal_used == helpers.LARGE
    assert h.free_normal == helpers.PAPER_HOST - helpers.LARGE
    # An ineligible preemptible still occupies h_f.
    assert h.free_full == (helpers.PAPER_HOST - helpers.LARGE
                           - helpers.MEDIUM - helpers.SMALL)
    assert [i.name for i in h.preemptibles] == ['p1', 'p2']


def test_run_time_accepts_naive_utc_and_unlaunched():
    i = helpers.inst('x', helpers.SMALL, minutes=90)
    naive = helpers.NOW.replace(tzinfo=None)
    assert i.run_time(naive) == 90 * 60
    assert host.Instance('u', helpers.SMALL, True).run_time(naive) == 0
