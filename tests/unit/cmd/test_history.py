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

"""``opie-manage history``: bad input is one line and exit 2; kept
explanations are grouped by preemption and filtered (without Nova: the
database reader is tested on the in-process cloud)."""
import argparse
import collections
import datetime
import json

import pytest

from opie.cmd import history
from opie.cmd import manage

Kept = collections.namedtuple('Kept', 'victim time host cell explanation')
T0 = datetime.datetime(2026, 11, 26, 15, 0, tzinfo=datetime.timezone.utc)


@pytest.mark.parametrize('argv, message', [
    (['--since', 'yesterday'],
     "argument --since: expected an ISO 8601 time such as "
     "2026-11-26T15:20:00Z, got 'yesterday'"),
    (['--until', '2026-13-01'],
     "argument --until: expected an ISO 8601 time such as "
     "2026-11-26T15:20:00Z, got '2026-13-01'"),
    (['--format', 'xml'], "argument -f/--format: invalid choice: 'xml'"),
])
def test_bad_options_are_one_line(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        manage.main(['history', '--config-file', 'nova.conf'] + argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert message in err


@pytest.mark.parametrize('argv, message', [
    (['--since', '2026-11-26T16:00', '--until', '2026-11-26T15:00+00:00'],
     'opie-manage history: error: --since 2026-11-26T16:00:00Z is not '
     'before --until 2026-11-26T15:00:00Z'),
    (['--since', '2026-11-26T17:00+01:00', '--until', '2026-11-26T16:00Z'],
     'opie-manage history: error: --since 2026-11-26T16:00:00Z is not '
     'before --until 2026-11-26T16:00:00Z'),
    ([], "opie-manage history: error: give the nova.conf with Nova's "
     'database settings: --config-file PATH'),
])
def test_bad_combinations_are_one_line(capsys, argv, message):
    assert manage.main(['history'] + argv + (
        ['--config-file', 'nova.conf'] if argv else [])) == 2
    assert capsys.readouterr().err == message + '\n'


def record(instance, victims, project='req', reason='request'):
    return {'version': 1, 'reason': reason, 'host': 'h1', 'why': 'cheapest',
            'ranked_by': 'nova', 'ranking': 'victims', 'cost': 3.0,
            'offset': 0.0,
            'victims': [{'uuid': uuid, 'cost': 1.5, 'project_id': owner,
                         'flavor': 'p.small'} for uuid, owner in victims],
            'victims_omitted': 0,
            'runners_up': [{'host': 'h2', 'fits': False, 'tier': 0,
                            'cost': 4.0, 'victims': 2, 'weight': 0.5,
                            'why_lost': 'its victims cost 4.0 > 3.0'}],
            'runners_up_omitted': 0,
            'refused': {'too little room even without its preemptibles '
                        '(h_n)': 2},
            'request': None if instance is None else {
                'instance_uuid': instance, 'project_id': project,
                'flavor': 'm1.large', 'vcpus': 4, 'memory_mb': 8192,
                'disk_gb': 80}}


def args(**kw):
    return argparse.Namespace(**dict(
        {'project': None, 'requester_project': None}, **kw))


def test_victims_of_one_preemption_are_one_entry():
    one = record('i1', [('v1', 'alpha'), ('v2', 'beta')])
    other = record('i2', [('v3', 'alpha')], project='gamma')
    kept = [Kept('v1', T0, 'h1', 'cell1', one),
            Kept('v2', T0 + datetime.timedelta(seconds=1), 'h1', 'cell1',
                 one),
            Kept('v3', T0, 'h1', 'cell1', other)]
    entries = history.entries(kept)
    assert [(e['request']['instance_uuid'], e['recorded'])
            for e in entries] == [('i1', ['v1', 'v2']), ('i2', ['v3'])]
    assert entries[0]['time'] == '2026-11-26T15:00:00Z'
    later = history.entries([Kept('v1', T0.replace(microsecond=5), 'h1',
                                  'c', one)])
    assert later[0]['time'] == '2026-11-26T15:00:00.000005Z'
    json.dumps(entries)
    by = {name: [e['request']['instance_uuid'] for e in entries
                 if history.matches(e, args(**{key: value}))]
          for name, key, value in [
              ('beta victims', 'project', 'beta'),
              ('alpha victims', 'project', 'alpha'),
              ('gamma asked', 'requester_project', 'gamma'),
              ('req asked', 'requester_project', 'req')]}
    assert by == {'beta victims': ['i1'], 'alpha victims': ['i1', 'i2'],
                  'gamma asked': ['i2'], 'req asked': ['i1']}


def test_the_table_says_everything_on_lines_of_its_own():
    one = record('i1', [('v1', 'alpha'), ('v2', 'be\nta')])
    text = history.table(history.entries(
        [Kept('v1', T0, 'h1', 'cell1', one)]))
    assert text.splitlines() == [
        '2026-11-26T15:00:00Z  h1  for server i1 of project req (flavor '
        'm1.large: 4 vCPU, 8192 MB, 80 GB)',
        '  why: cheapest',
        '  cost 3 (offset 0), ranked by nova',
        '  victim v1  project alpha  flavor p.small  cost 1.5',
        '  victim v2  project be\\nta  flavor p.small  cost 1.5  (no '
        'opie-preempt action: spared, or not terminated)',
        '  runner-up h2 (cost 4, 2 victims): its victims cost 4.0 > 3.0',
        '  refused by 2 hosts: too little room even without its '
        'preemptibles (h_n)']


def test_a_reconciler_entry_and_an_unreadable_one():
    repair = record(None, [('v1', 'alpha')], reason='reconcile')
    entries = history.entries([Kept('v1', T0, 'h1', 'c', repair),
                               Kept('v9', T0, 'h1', 'c', None)])
    assert [e['reason'] for e in entries] == ['reconcile', None]
    text = history.table(entries)
    assert '2026-11-26T15:00:00Z  h1  reconcile (no request)' in text
    assert 'why: no explanation: its details are not one' in text
    assert history.table([]) == 'No preemption kept matches.'
