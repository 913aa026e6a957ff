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

"""The OPIE paper's Tables 5 and 6 (section 4.4; acceptance 4) through the
plugin, as the scheduler decides them: the hosts OPIE's filter passes,
ranked by OPIE's weighers through Nova's handlers, the first host's victims
and their cost (partial billing hours, in seconds).

The hosts and instances are the examples' snapshots, which the core's
tests (``tests/unit/core/test_scheduling.py``) and ``opie-manage plan``
read too; a real Nova taking the first host and terminating its victims is
``test_preemption.FullOfPreemptibles``.
"""
import pathlib

import pytest

from opie.core import scheduling
from opie.core import snapshot
from opie.nova.request import plan as plan_mod
from tests.functional.plugin import cloud as cloud_mod
from tests.functional.plugin.cloud import spec
from tests.unit.core import helpers

SNAPSHOTS = pathlib.Path(__file__).parents[3] / 'examples' / 'snapshots'


def _table(cloud, number):
    """The cloud of the paper's Table ``number``."""
    snap = snapshot.load(SNAPSHOTS / ('paper-table%d.json' % number))
    # The plan's clock and hosts are the snapshot's.
    assert snap.now == helpers.NOW
    for host in snap.hosts:
        assert host.capacity == cloud_mod.CAPACITY
        cloud.host(host.name, normal=host.normal_used,
                   preemptibles=host.preemptibles)
    return cloud


def _decision(cloud, size):
    """The host Nova takes for a normal ``size`` request, its victims'
    names and their cost."""
    request_spec = spec(size)
    plan = cloud.plan(request_spec)
    states = cloud.host_states()
    with plan_mod.activated(plan):
        passed = cloud_mod.passing(states, request_spec)
        first = cloud_mod.ranking(
            [h for h in states if h.host in passed], request_spec)[0]
    option = plan.option({h.host: h for h in states}[first])
    return first, sorted(v.name for v in option.victims), option.cost


@pytest.mark.parametrize('table, size, ranking, host, victims, minutes', [
    # AP2+AP3+AP4 = 38+10+7; AP1 58, BP1 58, CP1 57, CP2+CP3 112.
    (5, 'large', scheduling.VICTIMS, 'host-A', ['AP2', 'AP3', 'AP4'], 55),
    # The literal Algorithm 4 ranks by all preemptibles: A 113, B 58,
    # C 169 (DESIGN.md's warning).
    (5, 'large', scheduling.ALL_PREEMPTIBLES, 'host-B', ['BP1'], 58),
    # BP3 alone covers host-B's shortfall; AP1 52, DP3 24.
    (6, 'medium', scheduling.VICTIMS, 'host-B', ['BP3'], 20),
], ids=['table5', 'table5-literal-algorithm-4', 'table6'])
def test_the_papers_choice(cloud, opie_options, table, size, ranking, host,
                           victims, minutes):
    opie_options(ranking=ranking)

    assert _decision(_table(cloud, table), size) == (
        host, victims, minutes * 60)
