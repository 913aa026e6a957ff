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

"""Hostile tasks against the task files (``outputs``, ``logs``).

A task runs any command on its server, where the agent's store (the
TempURL key of the job's container in its user data, or a shared file
system) is within its reach: it may write any object of the job's
store.  Whatever it writes there, ``opie-bot outputs`` and ``logs``
write nothing outside ``DATA_DIR/<job id>/outputs/<task>/``, read
nothing outside the store, end in one line and exit status 2 rather than
a traceback, and ``logs --tail`` holds no more than a few pieces of a
log however long its last lines are.
"""
import json
import os

import pytest

from opie.bot import agent
from opie.bot.cli import common
from opie.bot.state import outputs as outputs_mod
from opie.bot.state import paths
from opie.bot.state import tasklogs
from tests.unit.bot import tenant as tenant_mod
from tests.unit.bot import test_task_io
from tests.unit.bot.test_task_io import TASK


@pytest.fixture
def tenant(tmp_path, monkeypatch, capsys):
    return test_task_io.prepare(tenant_mod.Tenant(
        tmp_path, monkeypatch, capsys, test_task_io.JOB))


def store_of(tenant):
    return agent.DirStore(str(tenant.dir / 'store' / tenant.job_id()))


def forge(tenant, key, value):
    data = value if isinstance(value, bytes) else json.dumps(value).encode()
    store_of(tenant).put(key, data)


def files_below(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob('*')
                  if p.is_file())


def test_a_forged_result_of_no_task_of_the_job_is_not_fetched(tenant):
    # results/...json is the result of the task '..': its outputs would
    # go to DATA_DIR/<job>/outputs/.. (a Swift key may climb further:
    # results/../../x.json).
    assert tenant.run()[0] == 0
    before = files_below(tenant.dir)
    forge(tenant, 'outputs/evil/planted.txt', b'planted')
    for task in ('..', '.', 'not-in-the-job'):
        forge(tenant, 'results/%s.json' % task, {
            'task': task, 'exit_status': 0, 'outputs': {
                'prefix': 'outputs/evil/', 'files': ['planted.txt']}})

    code, out, err = tenant.cli('outputs', tenant.job_id())

    assert code == 0, err
    assert '3 output file(s) of 2 committed task(s)' in out
    assert [p for p in files_below(tenant.dir)
            if p.endswith('planted.txt') and not p.startswith('store/')] \
        == [], files_below(tenant.dir)
    assert {p for p in set(files_below(tenant.dir)) - set(before)
            if not p.startswith('store/')} == set()


class DictStore:
    """A store of any keys, as Swift's may be."""

    def __init__(self):
        self.objects = {}

    def get(self, key, limit=None):
        data = self.objects.get(key)
        if data is not None and limit is not None and len(data) > limit:
            raise ValueError('object %s is larger than %d bytes'
                             % (key, limit))
        return data

    def put(self, key, data):
        self.objects[key] = data

    def list(self, prefix=''):
        return sorted(k for k in self.objects if k.startswith(prefix))


@pytest.mark.parametrize('task', ['../../escaped', '..', '.', 'a/b', ''])
def test_fetch_task_refuses_a_task_id_that_is_no_directory_name(
        tmp_path, task):
    store = DictStore()
    store.put('outputs/%s/1-s/x' % task, b'x')
    agent.write_json(store, 'results/%s.json' % task, {
        'outputs': {'prefix': 'outputs/%s/1-s/' % task, 'files': ['x']}})
    data = tmp_path / 'data' / 'in'

    with pytest.raises(paths.PathError):
        outputs_mod.fetch_task(store, str(data), 'job-1', task)
    assert not (tmp_path / 'data').exists() or \
        files_below(tmp_path / 'data') == []


# A result whose ``outputs`` is not what an agent writes: one line
# naming the task, exit status 2, nothing written, no traceback.
BAD_OUTPUTS = [
    'not a dict',
    ['a list'],
    {'prefix': 'outputs/%(task)s/1-s/', 'files': 'abc'},
    {'prefix': 'outputs/%(task)s/1-s/', 'files': [7]},
    {'prefix': 'outputs/%(task)s/1-s/', 'files': [None]},
    {'prefix': 5, 'files': ['x']},
    {'files': ['x']},
    {'prefix': 'outputs/%(task)s/1-s/', 'files': ['x'], 'skipped': 3},
    # Another task's outputs, or a key that climbs out of the store: the
    # client's file store would read /etc/hostname, /dev/zero (no end),
    # a FIFO (no writer: no end).
    {'prefix': 'outputs/t2/', 'files': ['out/ré sult.txt']},
    {'prefix': 'outputs/%(task)s/../../../../../../../../../../etc/',
     'files': ['hostname']},
    {'prefix': 'outputs/%(task)s/../../../../../../../../../../dev/',
     'files': ['zero']},
    {'prefix': 'outputs/%(task)s/1-s/', 'files': ['a/../../../../../x']},
    {'prefix': 'outputs/%(task)s/1-s/', 'files': ['/etc/hostname']},
    {'prefix': 'outputs/%(task)s/1-s/', 'files': ['a\x00b']},
]


@pytest.mark.parametrize('bad', BAD_OUTPUTS)
def test_a_malformed_outputs_field_is_one_line(tenant, bad):
    assert tenant.run()[0] == 0
    results = 'results/%s.json' % TASK
    result = json.loads(store_of(tenant).get(results))
    result['outputs'] = json.loads(json.dumps(bad).replace('%(task)s', TASK))
    forge(tenant, results, result)
    mine = test_task_io.outputs_dir(tenant, TASK)
    before = files_below(mine)

    code, out, err = tenant.cli('outputs', tenant.job_id())

    assert code == common.EXIT_INPUT, (out, err)
    assert err.count('\n') == 1 and 'task %s' % TASK in err, err
    assert files_below(mine) == before


@pytest.mark.parametrize('body', [b'{not json', b'\xff\xfe', b'[1, 2]',
                                  b'"text"', b'null'])
def test_a_corrupt_result_is_one_line(tenant, body):
    assert tenant.run()[0] == 0
    forge(tenant, 'results/%s.json' % TASK, body)

    code, out, err = tenant.cli('outputs', tenant.job_id())

    assert code == common.EXIT_INPUT, (out, err)
    assert err.count('\n') == 1 and 'task %s' % TASK in err, err

    code, out, err = tenant.cli('logs', tenant.job_id(), TASK)

    assert code == common.EXIT_INPUT, (out, err)
    assert out == '' and err.count('\n') == 1 and TASK in err, err


@pytest.mark.parametrize('log', ['', 'servers/', 5, ['logs/'],
                                 'logs/t2/', 'logs/%s/../../' % TASK])
def test_a_log_prefix_not_the_task_s_own_is_one_line(tenant, log):
    # '' would print every object of the store (assignments, inputs,
    # checkpoints); another task's log is not this task's.
    assert tenant.run()[0] == 0
    results = 'results/%s.json' % TASK
    result = json.loads(store_of(tenant).get(results))
    result['log'] = log
    forge(tenant, results, result)

    code, out, err = tenant.cli('logs', tenant.job_id(), TASK)

    assert code == common.EXIT_INPUT, (out, err)
    assert out == '' and err.count('\n') == 1 and TASK in err, err


def test_a_run_of_a_strange_name_is_not_the_newest(tenant):
    # No result yet (it was lost, or the task still runs) and a run
    # named by no attempt number beside the real one.
    assert tenant.run()[0] == 0
    store = store_of(tenant)
    store.delete('results/t2.json')
    store.put('logs/t2/evil-x/00000000', b'forged\n')
    store.put('logs/t2/99/00000000', b'forged\n')

    code, out, err = tenant.cli('logs', tenant.job_id(), 't2', '--tail', '1')

    assert code == 0, err
    assert out == 'to stderr\n'


class CountingStore(agent.DirStore):
    """A file store that remembers the largest object it handed out."""
    largest = 0

    def get(self, key, limit=None):
        data = super().get(key, limit)
        CountingStore.largest = max(CountingStore.largest, len(data or b''))
        return data


def test_tail_of_a_log_without_newlines_holds_a_piece_at_a_time(tmp_path):
    # A task that prints one endless line: --tail 1 is that whole line,
    # but never more than a piece or two of it in memory at once.
    store = CountingStore(str(tmp_path))
    for n in range(200):
        store.put('logs/t/1-s/%08d' % n, b'x' * 1000)
    store.put('logs/t/1-s/%08d' % 200, b'x\n')

    got = list(tasklogs.pieces(store, 'logs/t/1-s/', tail=1))

    assert b''.join(got) == b'x' * 200001 + b'\n'
    assert max(len(p) for p in got) <= 2 * 1000


@pytest.mark.parametrize('tail,want', [
    (0, b''), (1, b'c\n'), (2, b'b\nc\n'), (3, b'a\nb\nc\n'),
    (10, b'a\nb\nc\n')])
def test_tail_across_pieces(tmp_path, tail, want):
    store = agent.DirStore(str(tmp_path))
    for n, piece in enumerate([b'a', b'\nb', b'\n', b'c\n']):
        store.put('logs/t/1-s/%08d' % n, piece)

    assert b''.join(tasklogs.pieces(store, 'logs/t/1-s/', tail)) == want


def test_tail_of_a_log_without_a_final_newline(tmp_path):
    store = agent.DirStore(str(tmp_path))
    store.put('logs/t/1-s/00000000', b'a\nb\nrunning')

    assert b''.join(tasklogs.pieces(store, 'logs/t/1-s/', 2)) == \
        b'b\nrunning'


@pytest.mark.parametrize('key', [
    'outputs/t/../../../etc/hostname', '../x', 'a/../../x', '/etc/hostname',
    'a//b', 'a/./b'])
def test_a_file_store_reads_nothing_outside_its_root(tmp_path, key):
    (tmp_path / 'outside').write_text('secret')
    store = agent.DirStore(str(tmp_path / 'store'))

    with pytest.raises(ValueError):
        store.get(key)


def test_a_name_the_data_dir_cannot_hold_is_one_line(tmp_path):
    store = DictStore()
    name = 'x' * 300
    store.put('outputs/t/1-s/%s' % name, b'x')
    agent.write_json(store, 'results/t.json', {
        'outputs': {'prefix': 'outputs/t/1-s/', 'files': [name]}})

    with pytest.raises(paths.PathError) as exc:
        outputs_mod.fetch_task(store, str(tmp_path), 'job-1', 't')
    assert 'too long' in str(exc.value)


@pytest.mark.parametrize('plant', [
    lambda path: os.symlink('/dev/zero', path),
    lambda path: os.mkfifo(path),
    lambda path: os.mkdir(path),
])
def test_a_link_fifo_or_directory_in_a_file_store_is_not_read(
        tenant, plant):
    # On a shared file system, a task puts them in place of an output.
    assert tenant.run()[0] == 0
    result = json.loads(store_of(tenant).get('results/%s.json' % TASK))
    spec = result['outputs']
    path = tenant.dir / 'store' / tenant.job_id() / (
        spec['prefix'] + spec['files'][0])
    path.unlink()
    plant(str(path))

    code, out, err = tenant.cli('outputs', tenant.job_id())

    assert code == common.EXIT_INPUT, (out, err)
    assert err.count('\n') == 1 and 'task %s' % TASK in err, err
    # The other task's outputs are fetched all the same.
    assert '2 output file(s) of 1 committed task(s)' in out
