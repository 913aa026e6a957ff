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

"""What a job owns, read from its journal."""
from opie.bot.openstack import live


def test_each_answer_belongs_to_the_intent_before_it():
    records = [
        {'event': 'server_creating', 'key': 'p0', 'nonce': 'a'},
        {'event': 'server_create', 'server': 's0', 'key': 'p0'},
        # Killed during this call: no answer.
        {'event': 'server_creating', 'key': 'p1', 'nonce': 'b'},
        {'event': 'resume'},
        {'event': 'server_creating', 'key': 'm1', 'nonce': 'c'},
        {'event': 'server_create', 'server': 's2', 'key': 'm1'},
    ]

    created, intents = live._owned(records)

    assert sorted(created) == ['s0', 's2']
    assert intents == {'b': records[2]}
