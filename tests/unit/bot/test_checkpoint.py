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

from opie.bot.hads import checkpoint
from opie.bot.job import model
from tests.unit.bot import helpers


def _task(runtime, memory):
    return helpers.job([runtime], memory=memory).tasks[0]


def test_dump_grows_with_memory():
    policy = model.Policy()
    assert checkpoint.dump_s(policy, _task(100, 0)) == policy.dump_base_s
    assert checkpoint.dump_s(policy, _task(100, 100)) == \
        policy.dump_base_s + 100 * policy.dump_per_mb_s


def test_count_is_eq1():
    policy = model.Policy()
    f = helpers.flavor()
    # 400 s * 0.1 / (12.99 + 0.022 * 10) = 3.03 -> 3 checkpoints
    assert checkpoint.count(policy, _task(400, 10), f) == 3
    assert checkpoint.count(policy, _task(100, 10), f) == 0


def test_interior_positions_save_work_but_paper_ones_only_before_end():
    f = helpers.flavor()
    task = _task(400, 10)
    assert checkpoint.positions(model.Policy(), task, f) == (
        0.25, 0.5, 0.75)
    paper = model.Policy(checkpoints='paper')
    assert checkpoint.positions(paper, task, f) == (1 / 3, 2 / 3)


def test_run_wall_and_saved_fraction():
    policy = model.Policy()
    f = helpers.flavor()
    task = _task(400, 10)
    run = checkpoint.plan_run(policy, task, f, model.PREEMPTIBLE)
    dump = checkpoint.dump_s(policy, task)
    assert run.wall_s == 400 + 3 * dump
    assert run.saved_after(100 + dump - 0.01) == 0.0
    assert run.saved_after(100 + dump) == 0.25
    assert run.saved_after(run.wall_s) == 0.75
    normal = checkpoint.plan_run(policy, task, f, model.NORMAL)
    assert normal.checkpoints == () and normal.wall_s == 400


def test_restore_costs_a_dump_and_keeps_later_checkpoints():
    policy = model.Policy()
    f = helpers.flavor()
    task = _task(400, 10)
    dump = checkpoint.dump_s(policy, task)
    run = checkpoint.plan_run(policy, task, f, model.PREEMPTIBLE, 0.5)
    assert run.checkpoints == (0.75,)
    assert run.wall_s == dump + 200 + dump
    assert run.saved_after(0) == 0.5
