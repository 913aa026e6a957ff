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

"""``opie-manage budget``: bad input and a cloud that refuses are one line
and exit 2 (what it writes to Placement: the functional test
``tests/functional/test_budgets.py``, on a real Placement)."""
import functools
import types

from keystoneauth1 import exceptions as ks_exceptions
import pytest

from opie.cmd import cloud
from tests.unit.cmd import helpers


run = functools.partial(helpers.run, command='budget')
refused = functools.partial(helpers.refused, command='budget')


@pytest.mark.parametrize('args, message', [
    ([], 'the following arguments are required: COMMAND'),
    (['spend'], "invalid choice: 'spend'"),
    (['set', 'p1'], 'the following arguments are required: --vcpu-hours'),
    (['set', 'p1', '--vcpu-hours', '-1'], 'must be >= 0, got -1'),
    (['set', 'p1', '--vcpu-hours', 'nan'], "expected a finite number"),
    (['set', 'p1', '--vcpu-hours', 'inf'], "expected a finite number"),
    (['set', 'p1', '--vcpu-hours', '1e12'], 'must be <= 35791394'),
    (['set', 'my project', '--vcpu-hours', '1'],
     "expected a project id (up to 64 letters, digits, \"_\", \"-\" or "
     "\".\"), got 'my project'"),
    (['set', 'a/b', '--vcpu-hours', '1'], "got 'a/b'"),
    (['set', 'x' * 65, '--vcpu-hours', '1'], 'expected a project id'),
    (['set', '', '--vcpu-hours', '1'], 'expected a project id'),
    (['unset'], 'the following arguments are required: PROJECT_ID'),
    (['unset', 'p\n1'], 'expected a project id'),
    (['list', '-f', 'xml'], "invalid choice: 'xml'"),
    (['list', 'p1'], 'unrecognized arguments: p1'),
])
def test_bad_input_is_one_line(capsys, args, message):
    err = refused(capsys, *args)

    assert message in err


def test_an_unreachable_cloud_is_one_line(capsys, monkeypatch):
    def connect(args):
        raise ks_exceptions.ConnectFailure('Unable to establish connection '
                                           'to http://keystone:5000\n')
    monkeypatch.setattr(cloud, 'connect', connect)

    err = refused(capsys, 'list')

    assert 'cloud: Unable to establish connection' in err


class Failing:
    """Placement answering every request with a server error."""

    def __getattr__(self, verb):
        def answer(url, *args, **kwargs):
            return types.SimpleNamespace(status_code=500, text='boom\n',
                                         json=dict)
        return answer


@pytest.mark.parametrize('args', [
    ['set', 'p1', '--vcpu-hours', '2'], ['unset', 'p1'], ['list'],
    ['list', '-f', 'json']])
def test_placement_failing_is_one_line(capsys, monkeypatch, args):
    monkeypatch.setattr(cloud, 'connect', lambda args: types.SimpleNamespace(
        placement_client=Failing))

    err = refused(capsys, *args)

    assert 'error: Placement: ' in err
    assert ': 500 boom' in err
