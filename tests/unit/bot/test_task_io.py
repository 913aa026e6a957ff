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

"""A task's files on the real client path (issue 25): inputs staged
through the job's store, declared outputs brought back into the data
directory, the full log kept in the store for ``opie-bot logs``.

The real agent runs the tasks (:mod:`fake_nova` ``agents_dir``), so a
task really reads its staged input and writes its outputs; hostile job
directories, data directories and tasks come first.
"""
import os
import sys

import pytest

from opie.bot import agent
from opie.bot.cli import common
from opie.bot.state import outputs as outputs_mod
from tests.unit.bot import fake_nova
from tests.unit.bot import tenant as tenant_mod

# A task id and file names with spaces and non-ASCII letters: they name
# objects, files and keys all the way.
TASK = 'tâche 1'
IN_NAME = 'data/we ird ü.txt'
OUT_NAME = 'out/ré sult.txt'
# More than the 4096 bytes a result keeps, over several log objects.
LINES = 3000
SCRIPT = '''\
import os, sys
text = open(%(input)r, encoding='utf-8').read()
os.makedirs('out', exist_ok=True)
open(%(output)r, 'w', encoding='utf-8').write(text.upper())
open('out/not-declared.log', 'w').write('stays on the server')
for i in range(%(lines)d):
    print('line %%05d' %% i)
print('to stderr', file=sys.stderr)
''' % {'input': IN_NAME, 'output': OUT_NAME, 'lines': LINES}

JOB = ("""\
job:
  name: io
  deadline_s: %%(deadline)s
%%(policy)s
""" + tenant_mod.SMALL_FLAVOR + """\
tasks:
  - id: "%(task)s"
    command: "%(python)s task.py"
    inputs: ["%(input)s", task.py, ./task.py]
    outputs: ["out/*.txt"]
    runtime_s: 600
  - id: t2
    command: "%(python)s task.py"
    inputs: [task.py, "%(input)s"]
    outputs: ["out/**"]
    runtime_s: 600
""") % {'task': TASK, 'python': sys.executable, 'input': IN_NAME}


def prepare(t):
    """A tenant of :data:`JOB`: its input files, real agents."""
    t.nova.agents_dir = str(t.dir / 'servers')
    (t.dir / 'data').mkdir()
    (t.dir / IN_NAME).write_text('staged input\n', encoding='utf-8')
    (t.dir / 'task.py').write_text(SCRIPT)
    # Small log objects: the log of a task spans several of them.
    t.monkeypatch.setattr(agent, 'LOG_CHUNK', 4096)
    return t


@pytest.fixture
def tenant(tmp_path, monkeypatch, capsys):
    return prepare(tenant_mod.Tenant(tmp_path, monkeypatch, capsys, JOB))


def store_keys(tenant, prefix):
    root = tenant.dir / 'store' / tenant.job_id()
    return agent.DirStore(str(root)).list(prefix)


def outputs_dir(tenant, task):
    return tenant.dir / tenant.job_id() / 'outputs' / task


def test_inputs_in_outputs_back_full_log_kept(tenant):
    code, out, err = tenant.run()

    assert code == 0, (out, err)
    # Each distinct content once, however many tasks and spellings.
    assert len(store_keys(tenant, 'inputs/')) == 2
    mine = outputs_dir(tenant, TASK)
    assert (mine / OUT_NAME).read_text(encoding='utf-8') == 'STAGED INPUT\n'
    # Only what the task declared comes back.
    assert sorted(p.name for p in mine.rglob('*') if p.is_file()) == \
        ['ré sult.txt']
    assert sorted(p.name for p in outputs_dir(tenant, 't2').rglob('*')
                  if p.is_file()) == ['not-declared.log', 'ré sult.txt']

    code, log, err = tenant.cli('logs', tenant.job_id(), TASK)

    assert code == 0, err
    lines = log.splitlines()
    assert len(log) > 4096 * 5
    assert lines[0] == 'line 00000' and 'line %05d' % (LINES - 1) in lines
    assert 'to stderr' in lines
    assert tenant.cli('logs', tenant.job_id(), TASK, '--tail', '2')[1] \
        == 'line %05d\nto stderr\n' % (LINES - 1)


def sparse(path, size):
    with open(path, 'wb') as f:
        f.truncate(size)


@pytest.mark.parametrize('name,make,why', [
    ('missing.txt', None, 'no such file'),
    ('data', None, 'a directory'),
    ('../outside.txt', lambda d: (d.parent / 'outside.txt').write_text('x'),
     "outside the job file's directory"),
    ('link.txt', lambda d: os.symlink(d.parent / 'outside.txt',
                                      d / 'link.txt'),
     "outside the job file's directory"),
    ('/etc/hostname', None, 'absolute'),
    ('fifo', lambda d: os.mkfifo(d / 'fifo'), 'not a regular file'),
    ('huge.bin', lambda d: sparse(d / 'huge.bin', agent.MAX_FILE + 1),
     'larger than'),
])
def test_a_bad_input_is_refused_before_anything_is_created(
        tenant, name, make, why):
    (tenant.dir.parent / 'outside.txt').write_text('not the job\'s')
    if make:
        make(tenant.dir)
    tenant.template = JOB.replace('inputs: [task.py, ',
                                  'inputs: [task.py, "%s", ' % name)
    tenant.write_job()

    code, out, err = tenant.run()

    assert code == common.EXIT_INPUT
    assert out == '' and err.count('\n') == 1, err
    assert why in err and name in err and 't2' in err
    assert tenant.nova.servers.all == {}
    assert not (tenant.dir / 'store').exists()
    assert not list((tenant.dir / 'jobs').glob('*.sqlite'))


def test_killed_between_upload_and_record_resume_stages_once(
        tenant, monkeypatch):
    create = agent.DirStore.create
    calls = []

    def killed_after_the_uploads(self, key, data):
        done = create(self, key, data)
        calls.append(key)
        if key.startswith('inputs/') and len(calls) == 2:
            raise fake_nova.Killed()
        return done
    monkeypatch.setattr(agent.DirStore, 'create', killed_after_the_uploads)
    assert tenant.run()[0] == 'killed'
    monkeypatch.setattr(agent.DirStore, 'create', create)
    assert 'inputs_staged' not in [r['event'] for r in tenant.records()]
    assert tenant.nova.servers.all == {}

    code, out, err = tenant.cli('resume', tenant.job_id())

    assert code == 0, (out, err)
    assert len(store_keys(tenant, 'inputs/')) == 2
    assert [r['event'] for r in tenant.records()].count('inputs_staged') == 1
    assert (outputs_dir(tenant, TASK) / OUT_NAME).read_text(
        encoding='utf-8') == 'STAGED INPUT\n'


def test_an_input_changed_before_resume_is_refused(tenant, monkeypatch):
    create = agent.DirStore.create

    def killed(self, key, data):
        create(self, key, data)
        raise fake_nova.Killed()
    monkeypatch.setattr(agent.DirStore, 'create', killed)
    assert tenant.run()[0] == 'killed'
    monkeypatch.setattr(agent.DirStore, 'create', create)
    (tenant.dir / 'task.py').write_text('print("another program")\n')

    code, out, err = tenant.cli('resume', tenant.job_id())

    assert code == common.EXIT_INPUT
    assert err.count('\n') == 1 and 'task.py' in err and 'changed' in err


def test_killed_between_download_and_record_resume_fetches_once(
        tenant, monkeypatch):
    fetch = outputs_mod.fetch
    seen = []

    def killed_after_first(*args, **kwargs):
        got = fetch(*args, **kwargs)
        seen.append(got)
        if len(seen) == 1:
            raise fake_nova.Killed()
        return got
    monkeypatch.setattr(outputs_mod, 'fetch', killed_after_first)
    assert tenant.run()[0] == 'killed'
    # Both tasks ended on the same poll: the job was done before the
    # client fetched anything.
    assert 'done' in [r['event'] for r in tenant.records()]

    code, out, err = tenant.cli('resume', tenant.job_id())

    assert code == common.EXIT_INPUT and 'is done' in err
    assert 'the outputs of 2 task(s) a killed client had not fetched are ' \
        'fetched' in err
    fetched = [r['task'] for r in tenant.records()
               if r['event'] == 'outputs_fetched']
    assert sorted(fetched) == sorted([TASK, 't2'])
    files = sorted(str(p.relative_to(tenant.dir / tenant.job_id()))
                   for p in (tenant.dir / tenant.job_id()).rglob('*')
                   if p.is_file())
    assert files == sorted(['outputs/%s/%s' % (TASK, OUT_NAME),
                            'outputs/t2/out/not-declared.log',
                            'outputs/t2/%s' % OUT_NAME])


def test_outputs_never_go_through_a_link_in_the_data_dir(tenant):
    # Someone plants links where the outputs will go: the job's
    # directory name is not known before the run, so the links go in as
    # the first task ends.
    precious = tenant.dir / 'precious'
    precious.mkdir()
    fetch = outputs_mod.fetch

    def plant(store, result, data_dir, below):
        root = os.path.join(data_dir, below)
        os.makedirs(os.path.dirname(root), exist_ok=True)
        if not os.path.lexists(root):
            os.symlink(precious, root)
        return fetch(store, result, data_dir, below)
    tenant.monkeypatch.setattr(outputs_mod, 'fetch', plant)

    code, out, err = tenant.run()

    assert code == 0, (out, err)
    assert list(precious.iterdir()) == []
    refused = [r for r in tenant.records() if r['event'] == 'outputs_refused']
    assert len(refused) == 2 and 'symbolic link' in refused[0]['reason']

    # opie-bot outputs fetches again: refused while the links stay...
    code, out, err = tenant.cli('outputs', tenant.job_id())

    assert code == common.EXIT_INPUT
    assert err.count('\n') == 2 and err.count('symbolic link') == 2, err
    assert list(precious.iterdir()) == []

    # ... and fetched once they are gone.
    tenant.monkeypatch.setattr(outputs_mod, 'fetch', fetch)
    for task in (TASK, 't2'):
        outputs_dir(tenant, task).unlink()
    code, out, err = tenant.cli('outputs', tenant.job_id())

    assert code == 0 and err == '', err
    assert '3 output file(s) of 2 committed task(s)' in out
    assert (outputs_dir(tenant, TASK) / OUT_NAME).read_text(
        encoding='utf-8') == 'STAGED INPUT\n'
    assert list(precious.iterdir()) == []


@pytest.mark.parametrize('argv,why', [
    (['logs', 'nope-000001', 't1'], 'no journal'),
    (['logs', 'JOB', 'no such task'], "no task 'no such task'"),
    (['outputs', 'nope-000001'], 'no journal'),
])
def test_logs_or_outputs_of_an_unknown_job_or_task(tenant, argv, why):
    assert tenant.run()[0] == 0
    argv = [tenant.job_id() if a == 'JOB' else a for a in argv]

    code, out, err = tenant.cli(*argv)

    assert code == common.EXIT_INPUT
    assert out == '' and err.count('\n') == 1 and why in err, err
