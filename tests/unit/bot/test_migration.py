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

"""The migration policy of a resumed server's running tasks, on its own."""
import pytest

from opie.bot.hads import migration

DEADLINE = 3600.0
ALPHA = 60.0


def _unasked():
    raise AssertionError('the latest checkpoint was read')


def test_a_task_safe_where_it_runs_stays_and_reads_no_checkpoint():
    # Lost just before its end at 2000 s, it is redone by 3060 s.
    assert not migration.restart_now(2000.0, 1000.0, _unasked, 1500.0,
                                     ALPHA, DEADLINE)


@pytest.mark.parametrize('end', [2540.0, 3000.0])
def test_an_unsafe_task_restarts_while_that_meets_the_deadline(end):
    # At 2540 s, end + alpha + redo is D itself: no longer in time.
    assert migration.restart_now(end, 1000.0, lambda: 900.0, 1500.0,
                                 ALPHA, DEADLINE)


@pytest.mark.parametrize('redo', [2040.0, 2500.0])
def test_an_unsafe_task_runs_on_when_a_restart_is_late_too(redo):
    # From 1500 s, a redo of 2040 s ends at D itself.
    assert not migration.restart_now(3000.0, 1000.0, lambda: redo, 1500.0,
                                     ALPHA, DEADLINE)
