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

import collections

from opie.bot.hads import wrr
from tests.unit.bot import helpers


def _table6():
    return helpers.example('j60').flavors.values()


def test_weights_rank_gflops_per_dollar_onto_1_to_3():
    assert wrr.weights(_table6()) == {'c4.large': 3, 'c4.xlarge': 3,
                                      'c3.large': 2, 'c3.xlarge': 1}


def test_equal_weights():
    flavors = [helpers.flavor('a'), helpers.flavor('b')]
    assert wrr.sequence(flavors) == ['a', 'b']


def test_prefixes_are_table9_mixes():
    order = wrr.sequence(_table6()) * 2
    mixes = {n: collections.Counter(order[:n]) for n in (6, 8, 10)}
    assert mixes[6] == {'c3.large': 2, 'c4.large': 2, 'c4.xlarge': 2}
    assert mixes[8] == {'c3.large': 2, 'c3.xlarge': 1, 'c4.large': 3,
                        'c4.xlarge': 2}
    assert mixes[10] == {'c3.large': 2, 'c3.xlarge': 1, 'c4.large': 4,
                         'c4.xlarge': 3}


def test_round_robin_skips_flavors_not_allowed():
    rr = wrr.RoundRobin(_table6())
    picks = [rr.next(lambda n: n != 'c4.large') for _ in range(6)]
    assert 'c4.large' not in picks and None not in picks
    assert rr.next(lambda n: False) is None
