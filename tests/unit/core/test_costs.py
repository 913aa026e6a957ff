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

import pytest

from opie.core import costs
from opie.core import resources as res
from tests.unit.core import helpers

HOST = helpers.paper_host('h', [])


def _cost(spec, instance, **kw):
    return costs.load_cost_model(spec, **kw).instance_cost(
        instance, HOST, helpers.NOW)


def test_period_is_run_time_modulo_billing_period():
    i = helpers.inst('a', helpers.SMALL, minutes=125)
    assert _cost('period', i) == 5 * 60
    assert _cost('period', i, period_seconds=600) == 5 * 60
    # A whole number of periods costs nothing (paper Algorithm 4).
    assert _cost('period', helpers.inst('b', helpers.SMALL, 120)) == 0


def test_paper_example_kills_the_120_minute_instance():
    # Section 4.2: of 120, 119 and 61 minutes, the 120-minute one goes.
    runs = {m: _cost('period', helpers.inst(str(m), helpers.SMALL, m))
            for m in (120, 119, 61)}
    assert min(runs, key=runs.get) == 120


def test_count_age_and_combination():
    i = helpers.inst('a', helpers.SMALL, minutes=70)
    assert _cost('count', i) == 1
    assert _cost('age', i) == 70 * 60
    assert _cost('period=1,count=60', i) == 10 * 60 + 60
    assert _cost({'age': 0.5}, i) == 35 * 60


def test_leftover_is_the_wasted_share_of_the_host():
    model = costs.load_cost_model('leftover')
    i = helpers.inst('a', helpers.LARGE)
    per_instance = model.instance_cost(i, HOST, helpers.NOW)
    assert per_instance == pytest.approx(4 / 8 + 8000 / 16384 + 80 / 1000)
    need = res.Resources(4, 8000, 80)
    # Freeing exactly the shortfall wastes nothing.
    assert per_instance + model.offset(need, HOST) == pytest.approx(0)


def test_available_lists_the_entry_points():
    assert {'period', 'count', 'age', 'leftover'} <= set(costs.available())


@pytest.mark.parametrize('spec, message', [
    ('nosuch', "unknown cost plugin 'nosuch'"),
    ('period=abc', "multiplier 'abc' is not a number"),
    ('period=-1', 'must be a finite number > 0'),
    ('period=nan', 'must be a finite number > 0'),
    ('period=0', 'must be a finite number > 0'),
    ('count=-inf', 'must be a finite number > 0'),
    ('period=1e308,age=1e308', r'must be at most 1e\+09'),
    ('period,count=2,period=3', "cost plugin 'period' is named twice"),
    ('period,,count', 'empty cost plugin name'),
])
def test_bad_specs_name_the_problem(spec, message):
    with pytest.raises(ValueError, match=message):
        costs.load_cost_model(spec)


def test_bad_period_is_rejected():
    with pytest.raises(ValueError, match='billing period must be > 0'):
        costs.load_cost_model('period', period_seconds=0)
