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

"""Fuzzing the reading of ``opie:preempt_at``, a server metadata value its
owner may write too (issue 26): any value gives a time or None, never an
exception, and no value makes the reconciler's check raise or trust a time
the scheduler could not have given."""
import datetime
import random

from nova import objects
import pytest

from opie.core import contract
from opie.nova import flavor_check
from opie.nova.request import notice

NOW = datetime.datetime(2026, 11, 26, 12, 0)
# Values an owner may write: edges of the calendar and of time zones,
# what parses loosely, what is no time at all.
HOSTILE = [
    '', ' ', 'Z', 'now', 'never', '0', '-1', '1e309', 'nan', 'inf',
    '0001-01-01', '0001-01-01T00:00:00Z', '0001-01-01T00:00:00+01:00',
    '0001-01-01T00:00:00-23:59', '9999-12-31T23:59:59Z',
    '9999-12-31T23:59:59.999999Z', '9999-12-31T23:59:59-01:00',
    '9999-12-31T23:59:59+23:59', '2026-02-30T00:00:00Z',
    '2026-01-01T24:00:00Z', '2026-01-01T00:00:60Z',
    '2026-01-01T00:00:00+99:00', '2026-01-01T00:00:00.' + '9' * 50 + 'Z',
    '２０２６-01-01', '2026-01-01\x00', '2026-01-01T00:00:00Z\n',
    'x' * 100000, '2' * 4301, '+002026-01-01', '20260101T000000Z',
    '2026-W01-1', '2026-001', None, 0, 1e308, float('nan'), b'2026-01-01',
    [], {}, object(),
]


@pytest.fixture(autouse=True)
def _fresh_process(monkeypatch):
    monkeypatch.setattr(flavor_check, '_TERMS', {})


def _random_values(count, seed=26):
    """Strings near ISO 8601: digits, separators and zone designators in
    random order and lengths."""
    rng = random.Random(seed)
    alphabet = '0123456789-:+.TZWz ' + '\u0660\u0966\uff10'
    for _ in range(count):
        yield ''.join(rng.choice(alphabet)
                      for _ in range(rng.randint(0, 40)))
    for _ in range(count):
        yield '%04d-%02d-%02dT%02d:%02d:%02d%s%02d:%02d' % (
            rng.choice((0, 1, 9999, rng.randint(0, 9999))),
            rng.randint(0, 13), rng.randint(0, 32),
            rng.randint(0, 25), rng.randint(0, 61), rng.randint(0, 61),
            rng.choice('+-'), rng.randint(0, 24), rng.randint(0, 60))


@pytest.mark.parametrize('value', HOSTILE)
def test_a_hostile_value_reads_as_a_time_or_none(value):
    at = notice.parse(value)
    assert at is None or (isinstance(at, datetime.datetime)
                          and at.tzinfo is None)


def test_random_values_read_as_a_time_or_none():
    for value in _random_values(3000):
        at = notice.parse(value)
        assert at is None or at.tzinfo is None, value


class _Compute:
    """compute_api.get of one instance whose system metadata holds
    ``value`` as OPIE's notice, and its metadata ``owners``."""

    def __init__(self, value, owners=None):
        system = {} if value is None else {notice.SYSTEM_KEY: value}
        self.instance = objects.Instance(
            uuid='u', system_metadata=system,
            metadata={} if owners is None else {contract.NOTICE_KEY: owners})

    def get(self, context, uuid, expected_attrs=None):
        return self.instance


# Nova keeps metadata values as strings.
@pytest.mark.parametrize('value', [v for v in HOSTILE if isinstance(v, str)])
def test_the_reconcilers_check_never_raises(value):
    assert notice.announced(_Compute(value), None, 'u', NOW) in (
        True, False)


@pytest.mark.parametrize('owners', [
    contract.notice_stamp(NOW + datetime.timedelta(seconds=60)),
    contract.notice_stamp(NOW + datetime.timedelta(days=365 * 100))])
def test_the_key_its_owner_writes_is_never_read(owners):
    assert not notice.announced(_Compute(None, owners), None, 'u', NOW)


def test_a_notice_the_scheduler_gave_is_left_to_it_until_its_stop_time():
    value = contract.notice_stamp(NOW + datetime.timedelta(seconds=60))
    assert notice.announced(_Compute(value), None, 'u', NOW)
    assert not notice.announced(_Compute(value), None, 'u', NOW + (
        datetime.timedelta(seconds=60 + 60 + notice.STOP_MARGIN)))
