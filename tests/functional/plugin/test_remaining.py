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

"""A request that knows no project has a budget asks nothing more per
host (:attr:`opie.nova.ledger.Remaining.unlimited`), and learns otherwise
as soon as anything says a ledger may exist."""
from unittest import mock

from opie.nova import ledger


def _remaining(default, status=400):
    # 400: Placement knows no ledger trait, so no ledger was ever written.
    client = mock.Mock()
    client.get.return_value = mock.Mock(status_code=status,
                                        json=lambda: {'resource_providers':
                                                      []})
    return client, ledger.Remaining(client, mock.Mock(global_id='g'),
                                    default)


def test_unknown_until_the_ledgers_are_listed():
    _, remaining = _remaining(None)
    assert not remaining.unlimited
    assert remaining.of({'p1'}) == {}
    assert remaining.unlimited


def test_never_with_a_default_budget():
    _, remaining = _remaining(600, status=200)
    assert remaining.of({'p1'}) == {'p1': 600}
    assert not remaining.unlimited


def test_a_refused_write_makes_it_ask_again():
    client, remaining = _remaining(None)
    remaining.of({'p1'})
    remaining.forget({'p1'})
    assert not remaining.unlimited
    # Another worker wrote p1's ledger meanwhile: it is read.
    client.get.side_effect = [
        mock.Mock(status_code=200, json=lambda: {'inventories': {
            ledger.RESOURCE_CLASS: {'total': 60}}}),
        mock.Mock(status_code=200, json=lambda: {'usages': {
            ledger.RESOURCE_CLASS: 20}})]
    assert remaining.of({'p1'}) == {'p1': 40}
