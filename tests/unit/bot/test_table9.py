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

"""The primary map without preemption against HADS Table 9."""
import pytest

from opie.bot.hads import job_map
from opie.bot.sim import map_choice
from opie.bot.job import model
from opie.bot.report import report
from opie.bot.hads import wrr
from opie.bot.sim import backend
from tests.unit.bot import helpers

# job: (preemptible servers, makespan incl. boot in s, cost in $)
TABLE9 = {'j60': (6, 20 * 60 + 8, 0.08), 'j80': (8, 19 * 60 + 49, 0.10),
          'j100': (10, 18 * 60 + 43, 0.13), 'ed200': (16, 31 * 60 + 27, 0.33)}


def _run(name):
    plan = map_choice.primary_map(helpers.example(name))
    return plan, report.build(backend.run(plan))


@pytest.mark.parametrize('name', helpers.PAPER_JOBS)
def test_server_count_and_ranking(name):
    plan, rep = _run(name)
    servers, _, _ = TABLE9[name]
    mix = plan.mix()
    assert abs(sum(mix.values()) - servers) <= 2
    assert plan.count(model.NORMAL) == 0
    # Flavors are used in the order of their WRR weight, except where a
    # flavor reached its limit and the round robin skipped it.
    weights = wrr.weights(plan.job.flavors.values())
    for a in plan.job.flavors.values():
        for b in plan.job.flavors.values():
            if weights[a.name] > weights[b.name]:
                assert (mix.get(a.name, 0) >= mix.get(b.name, 0)
                        or mix.get(a.name, 0)
                        == a.limits[model.PREEMPTIBLE])
    assert rep['result']['deadline_met']
    assert rep['counts']['migrations'] == 0


@pytest.mark.parametrize('name', ('j60', 'j80', 'j100'))
def test_makespan_and_cost(name):
    _, rep = _run(name)
    _, makespan, cost = TABLE9[name]
    assert rep['result']['makespan_s'] == pytest.approx(makespan, rel=0.15)
    assert rep['result']['cost'] == pytest.approx(cost, rel=0.20)


def test_normal_only_baseline_is_the_same_map():
    plan = map_choice.primary_map(helpers.example('j100'))
    base = job_map.normal_only(plan)
    assert [(s.key, s.flavor.name) for s in base.servers] == \
        [(s.key, s.flavor.name) for s in plan.servers]
    assert {s.market for s in base.servers} == {model.NORMAL}
    assert [t for s in base.servers for t, _, _ in s.tasks] == \
        [t for s in plan.servers for t, _, _ in s.tasks]
    assert base.expected_cost > 2.5 * plan.expected_cost


def test_plan_respects_dspot_and_falls_back_to_normal():
    job = helpers.example('j60')
    plan = map_choice.primary_map(job)
    for s in plan.servers:
        assert s.finish < plan.dspot
    tight = map_choice.primary_map(helpers.job([300] * 20, dspot=0.0))
    assert {s.market for s in tight.servers} == {model.NORMAL}
    assert all(s.finish < 2100 for s in tight.servers)


def test_plan_records_risks_instead_of_failing():
    f = helpers.flavor('f', limit=1)
    plan = map_choice.primary_map(helpers.job([1500] * 6, flavors=[f],
                                              dspot=0.0, max_normal=1))
    assert len(plan.servers) == 1 and plan.risks
    with pytest.raises(job_map.MapError):
        map_choice.primary_map(helpers.job([100], flavors=[
            helpers.flavor('f', limit=0)], dspot=0.0))
