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

"""[opie] values load_settings accepts never break the scheduler later
(found by an adversarial review: huge grace periods overflowed a
timedelta at start, a huge billing period or multipliers gave infinite
costs on every request); refused ones are one line."""
import datetime
import math

import pytest

from opie.nova import conf as opie_conf
from tests.unit.core import helpers
from tests.unit.nova.test_conf import _conf

HOST = helpers.paper_host('h', [])


@pytest.mark.parametrize('line', [
    'billing_period = 1' + '0' * 309,
    'costs = period=1e308,age=1e308',
])
def test_an_accepted_cost_setting_gives_a_finite_cost(tmp_path, line):
    try:
        settings = opie_conf.load_settings(_conf(tmp_path, line))
    except opie_conf.ConfigError:
        return  # refused in one line: fine
    instance = helpers.inst('a', helpers.SMALL, minutes=125)
    cost = settings.cost_model.instance_cost(instance, HOST, helpers.NOW)
    assert math.isfinite(cost)


@pytest.mark.parametrize('option', ['claimed_grace_period',
                                    'reconcile_grace_period'])
def test_an_accepted_grace_period_makes_a_timedelta(tmp_path, option):
    line = '%s = 100000000000000' % option
    try:
        conf = _conf(tmp_path, line)
        opie_conf.load_settings(conf)
    except opie_conf.ConfigError:
        return
    # What the manager does with it (opie/nova/periodic/reconciler.py
    # __init__).
    datetime.timedelta(seconds=getattr(conf.opie, option))
