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

import json
import statistics

import pytest

from opie.bot import cli
from opie.bot.job import generate
from opie.bot.job import jobfile
from tests.unit.bot import helpers

GOOD = """\
job:
  name: tiny
  deadline_s: 2100
flavors:
  small:
    vcpus: 2
    ram_gb: 4
    gflops: 20
    price_h: {preemptible: 0.03, normal: 0.1}
  big:
    vcpus: 4
    ram_gb: 8
    gflops: 80
    price_h: {preemptible: 0.06, normal: 0.2}
tasks:
  - id: a
    command: ./a
    memory_mb: 10
    runtime_s: 300
  - id: b
    runtime_s: {small: 400, big: 350}
  - id: c
    runtime_ref_s: 100
    ref_flavor: big
generate:
  - id: "sweep-{size}-{i}"
    sweep: {size: [1, 2, 3]}
    count: 2
    command: "./run --size {size}"
    runtime_s: 120
"""

# (what is broken, the text, what the message must say)
BROKEN = [
    ('yaml syntax', GOOD.replace('deadline_s: 2100', 'deadline_s: [2100'),
     ':4: not valid YAML'),
    ('negative memory', GOOD.replace('memory_mb: 10', 'memory_mb: -1'),
     ':18: tasks[0].memory_mb: -1 is less than the minimum of 0'),
    ('missing deadline', GOOD.replace('  deadline_s: 2100\n', ''),
     ":1: job: 'deadline_s' is a required property"),
    ('unknown flavor', GOOD.replace('{small: 400, big: 350}',
                                    '{small: 400, huge: 350}'),
     ":21: tasks[1].runtime_s.huge: no such flavor"),
    ('missing flavor', GOOD.replace('{small: 400, big: 350}',
                                    '{small: 400}'),
     ':21: tasks[1].runtime_s: no run time for flavor(s) big'),
    ('bad ref flavor', GOOD.replace('ref_flavor: big', 'ref_flavor: nope'),
     ':24: tasks[2].ref_flavor: runtime_ref_s needs ref_flavor'),
    ('duplicate id', GOOD.replace('id: b', 'id: a'),
     ":20: tasks[1].id: duplicate task id 'a' (first at line 16)"),
    ('two run times', GOOD.replace('    runtime_s: 300',
                                   '    runtime_s: 300\n'
                                   '    runtime_ref_s: 3'),
     ':16: tasks[0]: give exactly one of runtime_s and runtime_ref_s'),
    ('wrong type', GOOD.replace('vcpus: 2', 'vcpus: two'),
     ":6: flavors.small.vcpus: 'two' is not of type 'integer'"),
    ('unknown key', GOOD.replace('  name: tiny', '  name: tiny\n  nmae: x'),
     ":1: job: Additional properties are not allowed ('nmae' was "
     "unexpected)"),
    ('bad template', GOOD.replace('sweep-{size}-{i}', 'sweep-{sise}'),
     ":26: generate[0].id: cannot format 'sweep-{sise}'"),
    ('impossible mean', GOOD.replace(
        'runtime_s: 120', 'runtime_s: {min: 10, avg: 99, max: 100}'),
     ':30: generate[0].runtime_s: 6 values between 10 and 100 cannot '
     'average 99'),
    ('duplicate key', GOOD.replace('    command: ./a\n',
                                   '    command: ./a\n    command: ./b\n'),
     ':18: tasks[0].command: duplicate key'),
    ('too much memory', GOOD.replace('memory_mb: 10', 'memory_mb: 99999'),
     ':18: tasks[0].memory_mb: 99999.0 MB fits no flavor'),
    ('empty', '', ':1: (top level): the file is empty'),
    ('not a mapping', '- 1\n- 2\n',
     ":1: (top level): [1, 2] is not of type 'object'"),
    ('output above the task', GOOD.replace(
        '    command: ./a\n', '    command: ./a\n    outputs: ["../*"]\n'),
     ":18: tasks[0].outputs[0]: '../*' leaves the task's directory"),
    ('absolute output', GOOD.replace(
        '  name: tiny', '  name: tiny\n  outputs: ["out/*", /etc/*]'),
     ":3: job.outputs[1]: '/etc/*' leaves the task's directory"),
    ('empty output', GOOD.replace(
        '    runtime_s: 120', '    runtime_s: 120\n    outputs: [""]'),
     ":31: generate[0].outputs[0]: '' should be non-empty"),
    ('task id of dots', GOOD.replace('id: b', "id: '..'"),
     ":20: tasks[1].id: task id '..': 1 to 200 characters"),
    ('alpha too long', GOOD.replace(
        'flavors:', 'policy: {alpha_s: 5000}\nflavors:'),
     ':4: policy.alpha_s: must be shorter than job.deadline_s'),
]


def test_good_file_loads_every_kind_of_task():
    job = jobfile.parse(GOOD, 'tiny.yaml')
    ids = [t.id for t in job.tasks]
    assert ids[:3] == ['a', 'b', 'c']
    assert ids[3:] == ['sweep-1-0', 'sweep-2-1', 'sweep-3-2', 'sweep-1-3',
                       'sweep-2-4', 'sweep-3-5']
    a, b, c = job.tasks[:3]
    assert a.runtime_s == {'small': 300, 'big': 300}
    assert b.runtime_s == {'small': 400, 'big': 350}
    # big has 20 Gflops per vCPU, small 10: twice as slow.
    assert c.runtime_s == {'small': 200, 'big': 100}
    assert job.tasks[4].command == './run --size 2'
    assert job.flavors['big'].ram_mb == 8192
    assert job.flavors['big'].limits == {'preemptible': 5, 'normal': 5}


def test_outputs_of_the_job_unless_the_task_has_its_own():
    text = GOOD.replace('  name: tiny', '  name: tiny\n  outputs: ["*.csv"]')
    text = text.replace('    command: ./a\n',
                        '    command: ./a\n    outputs: [out/**, b.txt]\n')

    job = jobfile.parse(text, 'tiny.yaml')

    assert job.tasks[0].outputs == ('out/**', 'b.txt')
    assert {t.outputs for t in job.tasks[1:]} == {('*.csv',)}


def test_json_is_accepted_with_lines():
    data = json.loads(json.dumps(jobfile._Source('x', GOOD).data))
    text = json.dumps(data, indent=1)
    assert len(jobfile.parse(text, 'tiny.json').tasks) == 9
    data['flavors']['big']['gflops'] = 0
    with pytest.raises(jobfile.JobFileError) as exc:
        jobfile.parse(json.dumps(data, indent=1), 'tiny.json')
    assert 'flavors.big.gflops: 0 is less than or equal' in str(exc.value)
    assert str(exc.value).startswith('tiny.json:')


@pytest.mark.parametrize('what,text,expected', BROKEN,
                         ids=[b[0] for b in BROKEN])
def test_broken_file_names_line_and_field(what, text, expected):
    with pytest.raises(jobfile.JobFileError) as exc:
        jobfile.parse(text, 'bad.yaml')
    assert 'bad.yaml' + expected in str(exc.value)


@pytest.mark.parametrize('command', [['plan'], ['run', '--quiet'],
                                     ['sim', '--seeds', '1']])
@pytest.mark.parametrize('what,text,expected', BROKEN[:6],
                         ids=[b[0] for b in BROKEN[:6]])
def test_cli_exits_2_with_the_message(tmp_path, capsys, command, what, text,
                                      expected):
    path = tmp_path / 'bad.yaml'
    path.write_text(text)
    argv = [command[0], str(path)] + command[1:]
    if command[0] == 'run':
        argv += ['--report-dir', str(tmp_path)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err and 'Traceback' not in err


def test_missing_file(capsys):
    assert cli.main(['plan', '/nonexistent/job.yaml']) == 2
    assert 'cannot read' in capsys.readouterr().err


@pytest.mark.parametrize('name,table5', [
    ('j60', (102, 198, 323, 2.85, 4.69, 12.20)),
    ('j80', (103, 199, 322, 2.91, 4.71, 13.19)),
    ('j100', (107, 190, 330, 2.81, 4.49, 10.86)),
    ('ed200', (161, 211, 354, 153.74, 168.68, 177.77)),
])
def test_examples_match_table5(name, table5):
    job = helpers.example(name)
    runtimes = [t.runtime_s['c3.large'] for t in job.tasks]
    memory = [t.memory_mb for t in job.tasks]
    got = (min(runtimes), statistics.mean(runtimes), max(runtimes),
           min(memory), statistics.mean(memory), max(memory))
    assert got == pytest.approx(table5, abs=1e-6)
    assert len(job.tasks) == int(name.lstrip('jed'))
    assert all(len(set(t.runtime_s.values())) == 1 for t in job.tasks)


def test_fit_is_seeded_and_exact():
    import random
    values = generate.fit(random.Random(1), 50, 10.0, 20.0, 40.0)
    assert (min(values), max(values)) == (10.0, 40.0)
    assert statistics.mean(values) == pytest.approx(20.0)
    assert values == generate.fit(random.Random(1), 50, 10.0, 20.0, 40.0)
    assert not generate.feasible_mean(3, 10, 10.5, 40)
    assert generate.feasible_mean(3, 10, 25, 40)
