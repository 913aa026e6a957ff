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

"""The explanation of a preemption: exact about who ranked the hosts, and
bounded whatever it is given."""
import dataclasses
import json

import pytest

from opie.core import costs
from opie.core import explain
from opie.core import scheduling
from opie.core import snapshot
from tests.unit.core import helpers
from tests.unit.core import test_scheduling

inst, S = helpers.inst, helpers.SMALL


def option(host, cost, fits=False, victims=1, score=None):
    return scheduling.HostOption(
        host, fits, tuple(inst('%s-%d' % (host, i), S)
                          for i in range(victims)), cost,
        cost if score is None else score)


def candidates(*options, weights=None, failed=None):
    weights = weights or {}
    failed = failed or {}
    return [explain.Candidate(o.host, o, weights.get(o.host),
                              failed.get(o.host, '')) for o in options]


def test_paper_table5_by_opies_order():
    decision = test_scheduling._plan(5, 'large')
    snap = snapshot.load(test_scheduling.SNAPSHOTS / 'paper-table5.json')
    host = next(h for h in snap.hosts if h.name == decision.host)
    model = costs.load_cost_model('period')
    victims = [(v, model.instance_cost(v, host, snap.now))
               for v in decision.victims]
    record = explain.decision(decision.host, victims,
                              candidates(*decision.ranking),
                              {scheduling.NO_VICTIMS: 1})
    assert record['host'] == 'host-A'
    assert record['why'] == 'the lowest cost (3300.0) of 3 hosts that ' \
        'could take it'
    assert record['cost'] == 55 * 60
    assert sum(v['cost'] for v in record['victims']) == 55 * 60
    assert record['offset'] == 0
    assert [(r['host'], r['why_lost']) for r in record['runners_up']] == [
        ('host-C', 'its victims cost 3420.0 > 3300.0'),
        ('host-B', 'its victims cost 3480.0 > 3300.0')]
    assert record['refused'] == {scheduling.NO_VICTIMS: 1}
    assert record['ranked_by'] == explain.OPIE
    json.dumps(record, allow_nan=False)


def test_novas_weighers_putting_a_dearer_host_first_is_said():
    chosen, cheaper, free = option('a', 5.0), option('b', 2.0), option(
        'c', 0.0, fits=True, victims=0)
    record = explain.decision('a', [(inst('v', S), 5.0)],
                              candidates(chosen, cheaper, free, weights={
                                  'a': 3.0, 'b': 2.5, 'c': 2.5}),
                              {}, ranked_by=explain.NOVA)
    assert record['why'] == (
        "Nova's weighers put it first; by OPIE's terms alone c would have "
        'been (fits without preemption)')
    assert [r['why_lost'] for r in record['runners_up']] == [
        "its victims cost 2.0 < 5.0, but Nova's weighers ranked it lower "
        '(weight 2.5 < 3.0)',
        "fits without preemption, but Nova's weighers ranked it lower "
        '(weight 2.5 < 3.0)']
    assert record['runners_up'][1]['weight'] == 2.5


@pytest.mark.parametrize('weights, said', [
    ({'a': 2.0, 'b': 2.0}, "Nova's weighers tied it with b and Nova's "
     'order put it first'),
    ({'a': 1.0, 'b': 2.0}, 'Nova picked it at random among its best hosts '
     '([filter_scheduler] host_subset_size)'),
    ({}, 'Nova ranked it first'),
])
def test_why_nova_chose_a_dearer_host(weights, said):
    chosen, cheaper = option('a', 5.0), option('b', 2.0)
    record = explain.decision('a', [(inst('v', S), 5.0)],
                              candidates(chosen, cheaper, weights=weights),
                              {}, ranked_by=explain.NOVA)
    assert record['why'] == "%s; by OPIE's terms alone b would have been " \
        '(its victims cost 2.0 < 5.0)' % said


def test_a_tie_in_novas_weights_and_a_random_pick_are_said():
    chosen, same, heavier = option('a', 5.0), option('b', 5.0), option(
        'c', 5.0)
    record = explain.decision('a', [(inst('v', S), 5.0)],
                              candidates(chosen, same, heavier, weights={
                                  'a': 1.0, 'b': 1.0, 'c': 2.0}),
                              {}, ranked_by=explain.NOVA)
    assert [r['why_lost'] for r in record['runners_up']] == [
        "its victims cost 5.0 too; Nova's weighers gave both weight 1.0 "
        "and Nova's order put the chosen host first",
        'its victims cost 5.0 too; Nova weight 2.0 > 1.0, but Nova picks '
        'at random among its best hosts ([filter_scheduler] '
        'host_subset_size)']


def test_a_host_ranked_above_whose_claim_failed_says_why():
    first, chosen = option('a', 1.0), option('b', 3.0)
    ranked = candidates(first, chosen, weights={'a': 2.0, 'b': 1.0},
                        failed={'a': 'it changed under each of its claims'})
    record = explain.decision('b', [(inst('v', S), 3.0)], ranked, {},
                              ranked_by=explain.NOVA)
    assert record['runners_up'][0]['why_lost'] == (
        'ranked above it, but its claim failed: it changed under each of '
        'its claims')
    assert record['why'] == 'the only host left that could take it; 1 ' \
        'host ranked above it could not be claimed'


def test_the_chosen_host_is_weighed_against_those_below_it_only():
    first, chosen, dearer = option('a', 1.0), option('b', 3.0), option(
        'c', 4.0)
    ranked = candidates(first, chosen, dearer,
                        weights={'a': 3.0, 'b': 2.0, 'c': 1.0},
                        failed={'a': 'refused when claimed: no room'})
    record = explain.decision('b', [(inst('v', S), 3.0)], ranked, {},
                              ranked_by=explain.NOVA)
    assert record['why'] == 'the lowest cost (3.0) of 2 hosts left that ' \
        'could take it; 1 host ranked above it could not be claimed'


def test_a_tier_decides_before_the_cost_and_over_novas_weights():
    chosen = scheduling.HostOption('a', False, (inst('v', S),), 9.0, 9.0,
                                   tier=0)
    other = scheduling.HostOption('b', False, (inst('w', S),), 1.0, 1.0,
                                  tier=2)
    record = explain.decision('a', [(inst('v', S), 9.0)],
                              candidates(chosen, other), {})
    assert record['runners_up'][0]['why_lost'] == "its victims' tier 2 > 0"
    assert record['runners_up'][0]['tier'] == 2
    record = explain.decision('a', [(inst('v', S), 9.0)],
                              candidates(chosen, other,
                                         weights={'a': 1.0, 'b': 5.0}),
                              {}, ranked_by=explain.NOVA)
    assert record['runners_up'][0]['why_lost'] == (
        "its victims' tier 2 > 0 (a lower tier goes first, whatever Nova's "
        'weights)')


def test_numbers_that_differ_never_read_alike():
    chosen, other = option('a', 1234567.0000001), option('b', 1234567.0)
    record = explain.decision('b', [(inst('v', S), 1234567.0)],
                              candidates(chosen, other), {})
    assert record['runners_up'][0]['why_lost'] == \
        'its victims cost 1234567.0000001 > 1234567.0'


def test_the_offset_is_the_set_cost_beyond_its_victims():
    record = explain.decision('a', [(inst('v', S), 2.0)],
                              candidates(option('a', 1.5)), {})
    assert record['offset'] == -0.5
    assert record['why'] == 'the only host that could take it'


def test_hostile_sizes_stay_within_the_column():
    long = 'x' * 100000
    many = [(dataclasses.replace(inst('v%d' % i, S), uuid=long), 1.0)
            for i in range(500)]
    others = [option('h%d' % i + long, 2.0, victims=3) for i in range(50)]
    refused = {'reason %d %s' % (i, long): 1 for i in range(100)}
    record = explain.decision(
        'chosen' + long, many, candidates(option('chosen' + long, 500.0),
                                          *others), refused)
    record = explain.completed(
        record, long, {'project_id': long, 'flavor': long, 'vcpus': 1,
                       'memory_mb': 1, 'disk_gb': 1},
        {long: {'project_id': long, 'flavor': long}})
    text = explain.dumps(record)
    assert len(text) <= explain.MAX_CHARS
    assert text.isascii()
    kept = explain.loads(text)
    assert len(kept['runners_up']) == explain.MAX_RUNNERS_UP
    assert kept['runners_up_omitted'] == 50 - explain.MAX_RUNNERS_UP
    assert len(kept['victims']) + kept['victims_omitted'] == 500
    assert '(other reasons)' in kept['refused']


def test_the_reconciler_explains_without_a_request():
    record = explain.repair('reconcile', 'h', 'reconciler: over capacity',
                            [(inst('v', S), 2.0)], 2.0)
    record = explain.completed(record, owners={
        'uuid-v': {'project_id': 'p', 'flavor': 'f', 'user_id': 'u'}})
    assert record['request'] is None
    assert record['victims'] == [{'uuid': 'uuid-v', 'cost': 2.0,
                                  'project_id': 'p', 'flavor': 'f'}]


@pytest.mark.parametrize('text', ['', 'not json', '[1, 2]', '"a"', None])
def test_what_is_no_explanation_reads_as_none(text):
    assert explain.loads(text) is None
