import pytest

from opie.bot import dspot
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
