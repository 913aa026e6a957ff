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

"""One scheduling decision, including the paper's Tables 3-6 (section 4.4).

Hosts are 8 vCPU / 16384 MB with nothing reserved, flavors from Table 2,
disk not constraining. The text extraction of Tables 3 and 4 is garbled for
host-D; we use one normal instance D1 with the preemptibles listed.
"""
import pathlib

import pytest

from opie.core import costs
from opie.core import scheduling
from opie.core import snapshot
from tests.unit.core import helpers

SNAPSHOTS = pathlib.Path(__file__).parents[3] / 'examples' / 'snapshots'
PERIOD = costs.load_cost_model('period')
inst, S, M, L = helpers.inst, helpers.SMALL, helpers.MEDIUM, helpers.LARGE


def _plan(table, flavor, ranking=scheduling.VICTIMS, preemptible=False):
    snap = snapshot.load(SNAPSHOTS / ('paper-table%d.json' % table))
    request = scheduling.Request(snap.flavors[flavor], preemptible)
    return scheduling.schedule(request, snap.hosts, PERIOD, snap.now,
                               ranking=ranking)


@pytest.mark.parametrize('table, flavor, host, victims, minutes', [
    (3, 'medium', 'host-B', ['BP1'], 11),
    (4, 'medium', 'host-C', ['CP1'], 1),
    (5, 'large', 'host-A', ['AP2', 'AP3', 'AP4'], 55),
    (6, 'medium', 'host-B', ['BP3'], 20),
])
def test_paper_tables(table, flavor, host, victims, minutes):
    decision = _plan(table, flavor)
    assert decision.host == host
    assert sorted(v.name for v in decision.victims) == victims
    assert decision.cost == minutes * 60


def test_table5_alternatives_cost_what_the_paper_says():
    by_host = {o.host: o for o in _plan(5, 'large').ranking}
    assert by_host['host-B'].cost == 58 * 60          # BP1
    assert by_host['host-C'].cost == 57 * 60          # CP1 beats CP2+CP3
    assert 'host-D' not in by_host                    # only normal instances


@pytest.mark.parametrize('table, flavor, wrong_host', [
    (5, 'large', 'host-B'), (6, 'medium', 'host-A')])
def test_literal_algorithm_4_picks_the_wrong_host(table, flavor, wrong_host):
    # Summing the cost of *all* preemptibles (the literal Algorithm 4, as
    # upstream OPIE does) misses the cheapest kill: kept only as an option.
    assert _plan(table, flavor, scheduling.ALL_PREEMPTIBLES).host == \
        wrong_host


def test_a_preemptible_request_never_preempts():
    decision = _plan(5, 'large', preemptible=True)
    assert decision.host is None and decision.victims == ()
    assert 'preemptible request' in decision.reason
    assert 'h_f' in decision.reason


def test_fitting_hosts_come_first_and_kill_nothing():
    roomy = helpers.paper_host('roomy', [inst('p', L, 30)])
    full = helpers.paper_host('full', [inst('q', L, 60), inst('r', L, 60)])
    decision = scheduling.schedule(scheduling.Request(L), [full, roomy],
                                   PERIOD, helpers.NOW)
    assert decision.host == 'roomy' and decision.victims == ()
    assert [o.host for o in decision.ranking] == ['roomy', 'full']
    assert decision.ranking[1].victims and not decision.ranking[1].fits


def test_normal_request_is_filtered_on_h_n():
    normals = helpers.paper_host('normals', [
        inst('n1', L, preemptible=False), inst('n2', M, preemptible=False),
        inst('p', M, 5)])
    decision = scheduling.schedule(scheduling.Request(L), [normals], PERIOD,
                                   helpers.NOW)
    assert decision.host is None
    assert '(h_n)' in decision.reason


def test_locked_victims_and_max_victims_filter_hosts():
    locked = helpers.paper_host('locked', [
        inst('n', L, preemptible=False), inst('p', L, 10, eligible=False)])
    smalls = helpers.paper_host(
        'smalls', [inst('n2', L, preemptible=False)]
        + [inst('s%d' % i, S, 10) for i in range(4)])
    request = scheduling.Request(L)
    assert scheduling.assess_host(request, locked, PERIOD, helpers.NOW) == (
        None, scheduling.NO_VICTIMS)
    option, _ = scheduling.assess_host(request, smalls, PERIOD, helpers.NOW)
    assert len(option.victims) == 4
    decision = scheduling.schedule(request, [locked, smalls], PERIOD,
                                   helpers.NOW, max_victims=3)
    assert decision.host is None
    assert 'max_victims' in decision.reason
    assert 'no eligible set' in decision.reason


def test_unknown_ranking_is_refused():
    with pytest.raises(ValueError, match='unknown ranking'):
        scheduling.assess_host(scheduling.Request(S),
                               helpers.paper_host('h', []), PERIOD,
                               helpers.NOW, ranking='random')
