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

"""The directory store: every key listed, a half-written file never."""
import os

from opie.bot import agent


def test_a_key_may_start_with_a_dot_and_temp_files_stay_hidden(tmp_path):
    store = agent.DirStore(str(tmp_path))
    store.put('results/.hidden.json', b'{}')
    store.put('results/t1.json', b'{}')
    # What a writer killed between write and rename leaves behind.
    (tmp_path / 'results' / ('.x1y2' + agent.TMP_SUFFIX)).write_bytes(b'{')

    assert store.list('results/') == ['results/.hidden.json',
                                      'results/t1.json']
    assert store.create('results/.hidden.json', b'2') is False
    assert not [n for n in os.listdir(tmp_path / 'results')
                if n.startswith('.') and n.endswith(agent.TMP_SUFFIX)
                and n != '.x1y2' + agent.TMP_SUFFIX]
