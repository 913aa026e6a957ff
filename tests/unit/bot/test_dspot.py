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

import dataclasses

import pytest

from opie.bot.hads import dspot
from opie.bot.sim import map_choice
from tests.unit.bot import helpers


def test_list_makespan():
    assert dspot.list_makespan([5, 4, 3], 2) == 7
    assert dspot.list_makespan([], 2) == 0


def test_paper_rule_uses_longest_tasks_on_slowest_flavor():
    slow = helpers.flavor('slow', gflops=10, normal=0.2)
    fast = helpers.flavor('fast', gflops=50, normal=0.1)
    # 40 tasks, max_normal 20 -> n = 2 longest (300, 290) on 2 slots.
    job = helpers.job([300, 290] + [100] * 38, flavors=[slow, fast],
                      max_normal=20, alpha_s=180)
    assert dspot.compute(job) == 2100 - (300 + 180)


def test_code_rule_uses_shortest_tasks_on_cheapest_and_no_alpha():
    slow = helpers.flavor('slow', gflops=10, normal=0.2)
    fast = helpers.flavor('fast', gflops=50, normal=0.1)
    job = helpers.job([300, 290] + [100] * 37 + [50], flavors=[slow, fast],
                      max_normal=10, dspot='code')
    # n = 4 shortest: 50, 100, 100, 100 on 2 slots -> 200.
    assert dspot.compute(job) == 2100 - 200


def test_fixed_and_floor_at_zero():
    assert dspot.compute(helpers.job([100], dspot=1234.0)) == 1234.0
    job = helpers.job([3000, 3000, 3000], max_normal=1)
    assert dspot.compute(job) == 0.0


@pytest.mark.parametrize('name,expected', [('j60', 1309), ('j80', 1283),
                                           ('j100', 1025)])
def test_paper_jobs_keep_room_for_table9(name, expected):
    # The literal rule on the seeded Table 5 jobs; ED200 uses 'code'.
    assert dspot.compute(helpers.example(name)) == pytest.approx(
        expected, abs=1)


def test_latest_safe_caps_a_rule_blind_to_the_limits():
    # The fast flavor may not run as normal: a task lost on it re-runs on
    # the slow one, 4 times longer, and Dspot must leave room for that.
    slow = helpers.flavor('slow', gflops=10, limit=5)
    fast = dataclasses.replace(helpers.flavor('fast', gflops=40),
                               limits={'preemptible': 5, 'normal': 0})
    job = helpers.job([400] * 4, flavors=[slow, fast], dspot='code')
    tasks = tuple(dataclasses.replace(t, runtime_s={'slow': 1600.0,
                                                    'fast': 400.0})
                  for t in job.tasks)
    job = dataclasses.replace(job, tasks=tasks)
    assert dspot.latest_safe(job) == 2100 - (180 + 1600)
    plan = map_choice.primary_map(job)
    assert plan.dspot == dspot.latest_safe(job) < dspot.compute(job)
    assert not plan.risks


def test_dspot_past_the_deadline_is_capped_with_a_risk_line():
    plan = map_choice.primary_map(helpers.job([300] * 4, dspot=5000.0))
    assert plan.dspot == dspot.latest_safe(plan.job) < 2100
    assert any('past the deadline' in r for r in plan.risks)
    assert all(s.finish < 2100 for s in plan.servers)


def test_no_normal_server_allowed_keeps_the_rule_and_says_so():
    job = helpers.job([300] * 4, dspot=1500.0).with_limits(0, 0)
    assert dspot.latest_safe(job) is None
    plan = map_choice.primary_map(job)
    assert plan.dspot == 1500.0
    assert any('no normal server' in r for r in plan.risks)
