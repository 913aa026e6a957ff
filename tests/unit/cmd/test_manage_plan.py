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

"""``opie-manage plan`` as operators run it."""
import argparse
import contextlib
import importlib.metadata
import io
import json
import os
import pathlib
import re
import subprocess
import sys

import hypothesis
import pytest

from opie.cmd import manage

SNAPSHOTS = pathlib.Path(__file__).parents[3] / 'examples' / 'snapshots'


def _run(capsys, *args):
    rc = manage.main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def _names(table, uuids):
    snap = json.loads((SNAPSHOTS / ('paper-table%d.json' % table))
                      .read_text())
    by_uuid = {i['uuid']: i['name'] for h in snap['hosts']
               for i in h['instances']}
    return sorted(by_uuid[u] for u in uuids)


@pytest.mark.parametrize('table, flavor, host, victims', [
    (3, 'medium', 'host-B', ['BP1']),
    (4, 'medium', 'host-C', ['CP1']),
    (5, 'large', 'host-A', ['AP2', 'AP3', 'AP4']),
    (6, 'medium', 'host-B', ['BP3']),
])
def test_paper_tables_as_json(capsys, table, flavor, host, victims):
    rc, out, _ = _run(capsys, 'plan', '--snapshot',
                      str(SNAPSHOTS / ('paper-table%d.json' % table)),
                      '--flavor', flavor, '--format', 'json')
    result = json.loads(out)
    assert rc == 0
    assert result['host'] == host
    assert _names(table, result['victims']) == victims
    assert result['ranking'][0]['host'] == host
    assert set(result) >= {'host', 'victims', 'cost', 'ranking'}


def test_table5_costs_55_minutes_and_the_table_names_victims(capsys):
    rc, out, _ = _run(capsys, 'plan', '--snapshot',
                      str(SNAPSHOTS / 'paper-table5.json'),
                      '--vcpus', '4', '--memory-mb', '8000', '--disk-gb', '80')
    assert rc == 0
    assert 'Selected host-A: preempt AP4, AP3, AP2 (cost 3300)' in out


def test_no_host_exits_1_with_one_line(capsys):
    rc, out, err = _run(capsys, 'plan', '--snapshot',
                        str(SNAPSHOTS / 'paper-table5.json'),
                        '--flavor', 'large', '--preemptible',
                        '--format', 'json')
    assert rc == 1
    assert json.loads(out)['host'] is None
    assert len(err.strip().splitlines()) == 1
    assert 'no host can take the preemptible request' in err


@pytest.mark.parametrize('args, message', [
    (['--flavor', 'xlarge'], "unknown flavor 'xlarge'"),
    (['--vcpus', '2'], '--vcpus needs --memory-mb and --disk-gb'),
    (['--flavor', 'small', '--memory-mb', '5'], 'go with --vcpus'),
    (['--flavor', 'small', '--cost', 'bogus'],
     "--cost: unknown cost plugin 'bogus'"),
    (['--flavor', 'small', '--period-seconds', '0'],
     'billing period must be > 0'),
])
def test_bad_requests_exit_2(capsys, args, message):
    rc, _, err = _run(capsys, 'plan', '--snapshot',
                      str(SNAPSHOTS / 'paper-table3.json'), *args)
    assert rc == 2
    assert message in err
    assert 'Traceback' not in err


def test_malformed_snapshot_exits_2_naming_the_field(tmp_path, capsys):
    data = json.loads((SNAPSHOTS / 'paper-table6.json').read_text())
    data['hosts'][2]['instances'][0]['flavor'] = 'tiny'
    path = tmp_path / 'snap.json'
    path.write_text(json.dumps(data))
    rc, _, err = _run(capsys, 'plan', '--snapshot', str(path),
                      '--flavor', 'medium')
    assert rc == 2
    assert "hosts[2].instances[0].flavor: unknown flavor 'tiny'" in err


def test_console_script_runs_without_traceback():
    proc = subprocess.run(
        [sys.executable, '-m', 'opie.cmd.manage', 'plan', '--snapshot',
         '/nonexistent.json', '--flavor', 'small'],
        capture_output=True, text=True)
    assert proc.returncode == 2
    assert 'cannot read snapshot /nonexistent.json' in proc.stderr
    assert 'Traceback' not in proc.stderr


def _snapshot_text(table=3):
    return (SNAPSHOTS / ('paper-table%d.json' % table)).read_text()


def _attack(tmp_path, capsys, content, *args):
    path = tmp_path / 'snap.json'
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    rc, out, err = _run(capsys, 'plan', '--snapshot', str(path),
                        *(args or ('--flavor', 'medium')))
    return rc, out, err, path


def test_a_hostile_snapshot_exits_2_with_one_line(tmp_path, capsys):
    """What :func:`opie.core.snapshot.load` refuses (tests/unit/core/
    test_snapshot.py) ends as one line naming the file."""
    rc, _, err, path = _attack(tmp_path, capsys, _snapshot_text().replace(
        '"vcpus": 8', '"vcpus": 1%s' % ('0' * 400), 1))

    assert rc == 2
    assert err == ('opie-manage plan: error: snapshot %s: a number with '
                   'more than 18 digits: 1%s...\n' % (path, '0' * 19))


@pytest.mark.parametrize('breaker', ['\x1e', '\u2028', '\x85', '\r',
                                     '\x1b[2J', '\u202e'])
def test_a_name_that_breaks_lines_is_escaped_in_the_one_line(
        tmp_path, capsys, breaker):
    # Python's splitlines() and terminals break lines at far more than
    # "\n" (the fuzz test below found a flavor named "\x1e").
    snap = json.loads(_snapshot_text())
    snap['flavors']['odd' + breaker] = None
    rc, _, err, path = _attack(tmp_path, capsys, json.dumps(snap))

    assert rc == 2
    assert err == ('opie-manage plan: error: snapshot %s: flavors.odd%s: '
                   'expected an object, got null\n'
                   % (path, ascii(breaker)[1:-1]))


@pytest.mark.parametrize('argv', [
    ['extra\x1b[2J\u2028evil'], ['--bogus=\x1b]0;title\x07\u202e']])
def test_a_bad_option_is_one_escaped_line(capsys, argv):
    with pytest.raises(SystemExit) as exit_info:
        manage.main(['plan', '--snapshot', 'x.json', '--flavor', 'a']
                    + argv)

    assert exit_info.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith('opie-manage: error: unrecognized arguments: ')
    assert ascii(argv[0])[1:-1] in line


@pytest.mark.parametrize('value', ['nan', 'inf', '-inf'])
def test_a_period_must_be_a_finite_number(capsys, value):
    with pytest.raises(SystemExit) as exit_info:
        _run(capsys, 'plan', '--snapshot',
             str(SNAPSHOTS / 'paper-table3.json'), '--flavor', 'medium',
             '--period-seconds=%s' % value)

    assert exit_info.value.code == 2
    assert ('argument --period-seconds: expected a finite number, got %r'
            % value) in capsys.readouterr().err


def test_a_snapshot_that_is_a_directory_exits_2(tmp_path, capsys):
    rc, _, err = _run(capsys, 'plan', '--snapshot', str(tmp_path),
                      '--flavor', 'medium')

    assert rc == 2
    assert err == ('opie-manage plan: error: cannot read snapshot %s: Is a '
                   'directory\n' % tmp_path)


def test_a_closed_stdout_ends_quietly():
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, '-m', 'opie.cmd.manage', 'plan', '--snapshot',
             str(SNAPSHOTS / 'paper-table3.json'), '--flavor', 'medium',
             '--format', 'json'], stdout=write, stderr=subprocess.PIPE,
            text=True)
    finally:
        os.close(write)

    assert proc.stderr == ''
    assert proc.returncode == 1


def _parsers(parser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_every_option_has_plain_text_help(capsys):
    markup = re.compile(r'``|:[a-z]+:`')
    for parser in _parsers(manage.build_parser()):
        text = parser.format_help()
        assert not markup.search(text), parser.prog
        for action in parser._actions:
            if action.option_strings:
                assert action.help, '%s %s' % (parser.prog,
                                               action.option_strings)


def test_version_is_the_distributions(capsys):
    with pytest.raises(SystemExit) as exit_info:
        manage.main(['--version'])

    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out == 'opie-manage %s\n' % importlib.metadata.version(
        'openstack-opie')


# JSON a hostile snapshot may hold that json.dumps() would not write.
HOSTILE = ['1' + '0' * 400, '1' + '0' * 5000, '-1e400', '1e-400', 'NaN',
           '-Infinity', '[' * 50000 + ']' * 50000, '"\\ud800"', '-0',
           '1' + '0' * 17, '1.5e17']
PLACEHOLDER = '"opie-fuzz-placeholder"'


@hypothesis.settings(max_examples=200, deadline=None,
                     suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(data=hypothesis.strategies.data())
def test_fuzzed_snapshots_never_give_a_traceback(tmp_path_factory, data):
    """Any JSON, hostile or not, in place of any value of a real snapshot:
    a plan or one line naming the problem, exit 2."""
    st = hypothesis.strategies
    snapshot = json.loads(_snapshot_text(5))
    where = data.draw(st.sampled_from(list(_paths(snapshot))))
    text = data.draw(st.sampled_from(HOSTILE) | st.recursive(
        st.none() | st.booleans() | st.text(max_size=5) | st.integers()
        | st.floats(allow_nan=False),
        lambda inner: st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=8).map(json.dumps))
    snapshot = _put(snapshot, where, json.loads(PLACEHOLDER))
    path = tmp_path_factory.mktemp('fuzz') / 'snap.json'
    path.write_text(json.dumps(snapshot).replace(PLACEHOLDER, text))

    for request in (['--flavor', 'large'],
                    ['--vcpus', '4', '--memory-mb', '8000', '--disk-gb',
                     '80']):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            rc = manage.main(['plan', '--snapshot', str(path)] + request)
        assert rc in (0, 1, 2)
        if rc == 2:
            assert len(err.getvalue().splitlines()) == 1


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, path + (index,))


def _put(document, path, value):
    """``document`` with the value at ``path`` replaced (the root too)."""
    if not path:
        return value
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return document


def test_the_table_shows_the_tier_of_each_hosts_victims(capsys, tmp_path):
    # Table 5 (host-A's victims the cheapest), with host-A's preemptibles
    # of tier 1: the hosts of tier-0 victims go first.
    data = json.loads((SNAPSHOTS / 'paper-table5.json').read_text())
    for instance in data['hosts'][0]['instances']:
        tiered = instance['flavor'] + '-tier1'
        data['flavors'][tiered] = dict(data['flavors'][instance['flavor']],
                                       tier=1)
        instance['flavor'] = tiered
    path = tmp_path / 'tiered.json'
    path.write_text(json.dumps(data))
    args = ('plan', '--snapshot', str(path), '--vcpus', '4',
            '--memory-mb', '8000', '--disk-gb', '80')

    rc, out, _ = _run(capsys, *args)
    rc_json, out_json, _ = _run(capsys, *args, '--format', 'json')

    assert rc == rc_json == 0
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith('HOST'))
    assert header.split()[:3] == ['HOST', 'FITS', 'TIER']
    tiers = [line.split()[2] for line in lines[lines.index(header) + 1:]
             if line.startswith('host-')]
    assert tiers == ['0', '0', '1']
    ranking = json.loads(out_json)['ranking']
    assert [(o['host'], o['tier']) for o in ranking][-1] == ('host-A', 1)
    assert json.loads(out_json)['host'] != 'host-A'
