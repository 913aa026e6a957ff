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

"""Fuzzing the ``opie:notice`` extra spec (issue 26): whatever an operator
(or a tool) writes, :func:`flavor_spec.terms` reads a notice from 0 to
MAX_NOTICE, or the default with one line saying what is wrong; never an
exception."""
import random

import pytest

from opie.core import flavor_spec

HOSTILE = [
    '', ' ', '0', '00', '-0', '-1', '+1', '1.0', '1e3', '0x10', '1_000',
    ' 60', '60 ', '60\n', '\u0661\u0662', '\uff16\uff10', '²', 'nan', 'inf',
    str(flavor_spec.MAX_NOTICE), str(flavor_spec.MAX_NOTICE + 1),
    '0' * 40 + '1', '0' * 41 + '1', '9' * 4301, '1' * 100000, '\x00',
    'None', 'true', None, 60, -1, 1.5, True, [], {}, b'60', object(),
]


def _random_specs(count, seed=26):
    rng = random.Random(seed)
    alphabet = '0123456789 -+._xe\n\u0661\uff10'
    for _ in range(count):
        yield ''.join(rng.choice(alphabet)
                      for _ in range(rng.randint(0, 45)))


def _check(value):
    found, bad = flavor_spec.terms({flavor_spec.NOTICE_SPEC: value},
                                   default_notice=7)
    assert 0 <= found.notice <= flavor_spec.MAX_NOTICE
    assert found.notice == 7 or not bad
    for term, message in bad:
        assert term.spec == flavor_spec.NOTICE_SPEC
        assert '\n' not in message and len(message) < 300


@pytest.mark.parametrize('value', HOSTILE)
def test_a_hostile_notice_reads_as_a_bounded_number(value):
    _check(value)


def test_random_notices_read_as_bounded_numbers():
    for value in _random_specs(5000):
        _check(value)
