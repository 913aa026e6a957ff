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

"""pytest set-up of every suite: ``--shard K/N`` and ``--phases FILE``.

``--shard K/N`` runs every Nth test collected, from the Kth: N pytest
processes given 1/N to N/N run a suite between them, each test once
(tools/quickstart.py runs the unit and the functional suites so, on each
core). Neighbouring tests (of one class, one file) cost about the same,
so every Nth balances the processes.

``--phases FILE`` writes the seconds by phase of each in-process cloud
test (``tests/functional/conftest.py``), to ``FILE.K`` for shard K; other
suites have none to write. It is every suite's option because
``tools/quickstart.py test`` gives every process the same options.

Nothing else here: the functional suite's conftest must import Nova
before anything pulls in eventlet or futurist.
"""
import pytest


def pytest_addoption(parser):
    parser.addoption('--shard', default='1/1', metavar='K/N',
                     help='run every Nth test collected, from the Kth')
    parser.addoption('--phases', metavar='FILE',
                     help="write each in-process cloud test's seconds by "
                          'phase to FILE (FILE.K for shard K)')


def _shard(value):
    try:
        k, n = (int(part) for part in value.split('/'))
    except ValueError:
        k = n = 0
    if not 1 <= k <= n:
        raise pytest.UsageError('--shard %s: expected K/N with 1 <= K <= N'
                                % value)
    return k, n


def pytest_collection_modifyitems(config, items):
    k, n = _shard(config.getoption('shard'))
    if n == 1:
        return
    config.hook.pytest_deselected(items=[
        item for index, item in enumerate(items) if index % n != k - 1])
    items[:] = items[k - 1::n]
