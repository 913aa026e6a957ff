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

import math

import pytest

from opie.bot.report import html_page
from opie.bot.sim import map_choice
from opie.bot.report import report
from opie.bot.sim import backend
from tests.unit.bot import helpers


@pytest.fixture(scope='module')
def rep():
    plan = map_choice.primary_map(helpers.example('j60'))
    result = backend.run(plan, kh=3, kr=2.5, seed=4)
    return report.build(result, report.baseline(plan, backend.run))


def test_cost_is_billed_seconds_times_price(rep):
    total = 0.0
    for s in rep['servers']:
        ended = s['ended']
        frozen = sum(b - a for a, b in s['hibernations'])
        assert s['billed_s'] == math.ceil(ended - s['created'] - frozen
                                          - 1e-9)
        total += s['billed_s'] * s['price_h'] / 3600
    assert rep['result']['cost'] == pytest.approx(total, rel=1e-12)
    assert rep['accounting']['cost_is_sum_of_billed_seconds_times_price']
    assert rep['accounting']['matches_cloud_bill']
    assert rep['accounting']['cloud_bill'] == pytest.approx(total)
    assert rep['result']['cost'] == pytest.approx(
        rep['result']['cost_preemptible'] + rep['result']['cost_normal'])


def test_hibernated_time_is_not_billed(rep):
    hibernated = [s for s in rep['servers'] if s['hibernated_s'] > 0]
    assert hibernated
    for s in hibernated:
        assert s['billed_s'] < s['ended'] - s['created']


def test_counts_match_the_journal_and_the_curve_ends_at_the_cost(rep):
    counts = rep['counts']
    assert counts['migrations'] == sum(
        counts['migrations_by_target'].values())
    assert counts['servers_hibernated'] >= counts['preemption_events'] > 0
    done = [s for s in rep['segments'] if s['outcome'] == 'done']
    assert len(done) == rep['job']['tasks']
    assert rep['cost_curve'][-1][1] == pytest.approx(rep['result']['cost'],
                                                     abs=0.001)
    assert rep['result']['saving'] == pytest.approx(
        1 - rep['result']['cost'] / rep['result']['baseline_cost'])


def test_html_is_self_contained(rep):
    page = html_page.render(rep)
    assert page.count('<svg') == 2
    assert 'script' not in page and 'http' not in page.split('<svg')[0]
    assert 'normal-only baseline' in page
