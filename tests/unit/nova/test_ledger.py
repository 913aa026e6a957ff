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

"""The ledger's pieces that need no Placement: what a charge and a budget
look like in a write (the writes themselves: the functional
``tests/functional/test_budgets.py``)."""
import datetime

import pytest

from opie.core import host as core_host
from opie.nova.request import ledger

UTC = datetime.timezone.utc


def test_a_charge_says_when_it_expires():
    until = datetime.datetime(2026, 11, 27, 15, 20, 7, 900000)

    entries = ledger.entries('instance', [ledger.Charge('victim', 'p1', 132)],
                             until)

    (consumer, entry), = entries.items()
    assert consumer == ledger.charge_consumer('victim', 'instance')
    assert entry == {
        'allocations': {ledger.provider_uuid('p1'): {'resources': {
            ledger.RESOURCE_CLASS: 132}}},
        'consumer_generation': None, 'project_id': ledger.PROJECT_ID,
        'user_id': 'opie-charge-until-2026-11-27T15:20:07Z'}
    assert ledger.expires(entry['user_id']) == datetime.datetime(
        2026, 11, 27, 15, 20, 7, tzinfo=UTC)


@pytest.mark.parametrize('user', [
    None, '', 'admin', 'opie-charge-until-', 'opie-charge-until-tomorrow',
    'opie-charge-until-2026-13-01T00:00:00Z'])
def test_a_charge_that_does_not_say_when_has_no_expiry(user):
    assert ledger.expires(user) is None


def test_every_process_derives_the_same_uuids():
    assert ledger.provider_uuid('p1') == ledger.provider_uuid('p1')
    assert ledger.provider_uuid('p1') != ledger.provider_uuid('p2')
    assert (ledger.charge_consumer('v', 'i1')
            != ledger.charge_consumer('v', 'i2'))


@pytest.mark.parametrize('minutes, capacity', [(0, 0), (1, 1), (600, 600)])
def test_a_budget_is_the_inventorys_capacity(minutes, capacity):
    record = ledger.inventory(minutes)

    # Placement refuses a total of 0: a budget of 0 is 1 wholly reserved.
    assert record['total'] >= 1
    assert core_host.inventory_capacity(record) == capacity
    assert ledger.capacity({ledger.RESOURCE_CLASS: record}) == capacity
    assert ledger.capacity({}) is None
