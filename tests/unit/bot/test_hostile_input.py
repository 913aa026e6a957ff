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

"""Hostile job files, traces and options: one line per problem naming
the file, field or option, exit status 2, no traceback, no hang, and
nothing started."""
import copy
import json
import os
import random
import subprocess
import sys

import pytest
import yaml

from opie.bot import cli
from tests.unit.bot import helpers

J60 = str(helpers.JOBS / 'j60.yaml')
HOSTILE = [float('nan'), float('inf'), -float('inf'), 10 ** 400, -1, 0,
           1e300, 2 ** 63, '', '\x00', '../../x', 'a' * 5000, [], {},
           [[[[[[[[[[[[[[1]]]]]]]]]]]]]], True, None, 1.5, 'paper']


def one_line_per_problem(err, where):
    lines = err.strip().splitlines()
    assert lines, 'no message'
    for line in lines:
        assert 'Traceback' not in line and where in line, line
    return lines


def leaves(doc, path=()):
    """Every path to a value of ``doc``."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield path + (k,)
            yield from leaves(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield path + (i,)
            yield from leaves(v, path + (i,))


def mutated(doc, path, value):
    out = copy.deepcopy(doc)
    node = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding='utf-8', errors='surrogatepass')
    return str(path)


@pytest.mark.parametrize('example', ['j60', 'sweep'])
def test_fuzzed_job_files_plan_or_say_why(tmp_path, capsys, example):
    with open(helpers.JOBS / ('%s.yaml' % example)) as f:
        doc = yaml.safe_load(f)
    rng = random.Random(7)
    paths = list(leaves(doc))
    for case in range(250):
        path = rng.choice(paths)
        value = rng.choice(HOSTILE)
        text = json.dumps(mutated(doc, path, value)) \
            if case % 2 else yaml.safe_dump(mutated(doc, path, value))
        job = write(tmp_path, 'f%d.yaml' % case, text)
        code = cli.main(['plan', job])
        out, err = capsys.readouterr()
        assert code in (0, 2), (path, value, err)
        if code == 2:
            one_line_per_problem(err, job)
            continue
        assert err == '' and 'job ' in out
        if case % 10 == 0:
            assert cli.main(['run', job, '--quiet']) in (0, 1)
            assert capsys.readouterr().err == ''


@pytest.mark.parametrize('text, field', [
    ('job: {name: a, deadline_s: .nan}', 'job.deadline_s'),
    ('job: {name: a, deadline_s: .inf}', 'job.deadline_s'),
    ('job: {name: a, deadline_s: %d}' % 10 ** 400, 'job.deadline_s'),
    ('job: {name: a, deadline_s: 1.0e+300}', 'job.deadline_s'),
    ('job: {name: "../x", deadline_s: 100}', 'job.name'),
    ('job: {name: "a/b", deadline_s: 100}', 'job.name'),
    ('job: {name: "a\\0b", deadline_s: 100}', 'job.name'),
    ('job: {name: "%s", deadline_s: 100}' % ('a' * 45), 'job.name'),
    ('job: {name: "j60\\n", deadline_s: 100}', 'job.name'),
    ('job: {name: a, deadline_s: %s}' % ('9' * 5001), 'job.deadline_s'),
    ('job: {name: a, deadline_s: !!int abc}', 'job.deadline_s'),
    ('job: {name: a, deadline_s: !!float abc}', 'job.deadline_s'),
    ('job: {name: a, deadline_s: !!bool maybe}', 'job.deadline_s'),
    ('job: {name: a, deadline_s: !!timestamp junk}', 'job.deadline_s'),
    ('job: {name: a, deadline_s: !!python/object:os.system x}',
     'job.deadline_s: not a valid value for tag'),
    ('job: {name: a\x01}', 'h.yaml:1: not valid YAML'),
    ('job: ' + '[' * 5000 + ']' * 5000, 'nested too deeply'),
    ('a: &a ["x","x","x","x","x","x","x","x","x"]\n'
     + ''.join('%s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n'
               % ((chr(98 + i), chr(98 + i)) + (chr(97 + i),) * 9)
               for i in range(9)), 'expands too far'),
])
def test_hostile_documents(tmp_path, capsys, text, field):
    job = write(tmp_path, 'h.yaml', text)
    assert cli.main(['plan', job]) == 2
    lines = one_line_per_problem(capsys.readouterr().err, job)
    assert any(field in line for line in lines), lines


@pytest.mark.parametrize('change, field', [
    ({'generate': [{'id': 't{i}', 'count': 10 ** 9,
                    'runtime_s': 10}]}, 'generate[0].count'),
    ({'generate': [{'id': 't{i}', 'count': 1000, 'runtime_s': 10,
                    'sweep': {'a': list(range(1000))}}]}, 'more than'),
    ({'tasks': [{'id': 'a/b', 'runtime_s': 5}]}, "tasks[0].id"),
    ({'tasks': [{'id': 'x', 'runtime_s': 5, 'command': 'a\x00b'}]},
     'tasks[0].command'),
    ({'generate': [{'id': 't{i.real}', 'runtime_s': 5}]},
     'generate[0].id'),
    ({'generate': [{'id': 't{i[0]}', 'runtime_s': 5}]}, 'generate[0].id'),
    ({'generate': [{'id': 't{i}', 'command': '{i:100000000}',
                    'runtime_s': 5}]}, 'generate[0].command'),
    ({'policy': {'dump_base_s': 1e-300}}, None),
    ({'flavors': {'f': {'vcpus': 1, 'ram_gb': 1, 'gflops': 1,
                        'price_h': {'preemptible': 0, 'normal': 0}}}},
     None),
])
def test_hostile_fields(tmp_path, capsys, change, field):
    doc = {'job': {'name': 'h', 'deadline_s': 3600},
           'flavors': {'f': {'vcpus': 2, 'ram_gb': 4, 'gflops': 10,
                             'price_h': {'preemptible': 0.01,
                                         'normal': 0.1}}},
           'tasks': [{'id': 't', 'runtime_s': 600}]}
    doc.update(change)
    job = write(tmp_path, 'h.yaml', json.dumps(doc))
    code = cli.main(['plan', job])
    out, err = capsys.readouterr()
    if field is None:
        # Legal, if odd: it plans (and runs) without a traceback.
        assert code == 0, err
        assert cli.main(['run', job, '--quiet']) in (0, 1)
    else:
        assert code == 2
        lines = one_line_per_problem(err, job)
        assert any(field in line for line in lines), lines


@pytest.mark.parametrize('argv, option', [
    (['run', J60, '--kh', 'nan'], '--kh'),
    (['run', J60, '--kr', '-1'], '--kr'),
    (['run', J60, '--progress-every', '0'], '--progress-every'),
    (['run', J60, '--progress-every', '1e-300'], '--progress-every'),
    (['run', J60, '--max-normal', '3'], '--max-normal'),
    (['run', J60, '--normal-limit', '2', '--max-normal', '0'],
     '--max-normal'),
    (['status', '../../etc/x-abcdef'], 'not a job id'),
    (['run', J60, '--normal-limit', '-1'], '--normal-limit'),
    (['run', J60, '--backend', 'openstack', '--poll', 'inf'], '--poll'),
    (['run', J60, '--backend', 'openstack', '--speed', 'nan'], '--speed'),
    (['run', J60, '--backend', 'openstack', '--agent-poll', '-5'],
     '--agent-poll'),
    (['run', J60, '--backend', 'openstack', '--retries', '1e9'],
     '--retries'),
    (['sim', J60, '--seeds', '0'], '--seeds'),
    (['demo', '--speed', '0'], '--speed'),
    (['run', J60, '--os-cloud', 'x', '--image', 'y'], '--os-cloud, --image'),
])
def test_bad_options_are_one_line_and_start_nothing(tmp_path, capsys, argv,
                                                    option):
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert option in line
    assert not (tmp_path / 'opie-bot-data' / 'jobs').exists()


@pytest.mark.parametrize('breaker', ['\x1e', '\u2028', '\x85', '\r',
                                     '\x1b[2J', '\u202e'])
def test_names_that_break_lines_are_escaped(tmp_path, capsys, breaker):
    """Python's splitlines() and terminals break lines at far more than
    "\\n": a key, a flavor or an option is quoted escaped."""
    with open(J60) as f:
        doc = yaml.safe_load(f)
    doc['odd' + breaker] = 1
    doc['flavors']['f' + breaker] = {'vcpus': 1}
    job = write(tmp_path, 'b.yaml', json.dumps(doc))
    assert cli.main(['plan', job]) == 2
    lines = one_line_per_problem(capsys.readouterr().err, job)
    escaped = ascii(breaker)[1:-1]
    assert any("flavors.f%s: 'gflops'" % escaped in line for line in lines)
    assert any('odd%s' % escaped in line for line in lines)

    with pytest.raises(SystemExit) as exit_info:
        cli.main(['run', J60, '--scenario', 'sc' + breaker])
    assert exit_info.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert 'sc%s' % escaped in line


def test_a_trace_with_a_nan_time(tmp_path, capsys):
    trace = write(tmp_path, 't.csv', 'time_s,flavor,event\n'
                                     'nan,c4.large,terminate\n')
    assert cli.main(['run', J60, '--trace', trace, '--quiet']) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert 't.csv:2' in line


def test_simulated_results_say_so(capsys):
    assert cli.main(['run', J60, '--quiet']) == 0
    assert 'simulated cloud: j60' in capsys.readouterr().out


def test_output_into_a_pipe_closed_early():
    # ``opie-bot run j60.yaml --progress-every 1 | head -1``: far more
    # than a pipe holds.
    plan = subprocess.Popen(
        [sys.executable, '-m', 'opie.bot.cli', 'run', J60,
         '--progress-every', '1'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    plan.stdout.readline()
    plan.stdout.close()
    err = plan.stderr.read()
    assert plan.wait() == 0, err
    assert err == b''


def test_a_merge_key_may_be_overridden(tmp_path, capsys):
    job = write(tmp_path, 'm.yaml', """
job: {name: m, deadline_s: 3600}
flavors:
  a: &base {vcpus: 2, ram_gb: 4, gflops: 10,
            price_h: {preemptible: 0.01, normal: 0.1}}
  b: {<<: *base, vcpus: 4}
tasks: [{id: t, runtime_s: 600}]
""")
    assert cli.main(['plan', job]) == 0, capsys.readouterr().err


@pytest.mark.parametrize('special', ['/dev/zero', 'fifo', 'dir'])
def test_a_job_file_that_is_not_a_regular_file(tmp_path, capsys, special):
    path = {'/dev/zero': '/dev/zero', 'fifo': str(tmp_path / 'f'),
            'dir': str(tmp_path)}[special]
    if special == 'fifo':
        os.mkfifo(path)
    assert cli.main(['plan', path]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == '%s: not a regular file' % path
