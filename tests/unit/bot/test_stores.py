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

"""The job's object store on Swift: the client by token, agents by TempURL.

Listing pages hold two names in the fake, so paging is exercised.
"""
import pytest
import yaml

from opie.bot import agent
from opie.bot.openstack import stores
from tests.unit.bot import fake_swift
from tests.unit.bot import helpers


@pytest.fixture
def swift():
    server = fake_swift.FakeSwift(token='tok-7')
    yield server
    server.stop()


@pytest.fixture
def conn(swift, tmp_path):
    path = tmp_path / 'clouds.yaml'
    path.write_text(yaml.safe_dump({'clouds': {'s': {
        'auth_type': 'admin_token',
        'auth': {'endpoint': swift.url, 'token': 'tok-7'}}}}))
    return helpers.connect({'OS_CLIENT_CONFIG_FILE': str(path)}, 's')


def test_agent_and_client_share_the_jobs_container(swift, conn):
    client, spec = stores.open_store('swift', 'j-1', conn, create=True)
    box = swift.containers['opie-bot-j-1']
    assert box['meta'][fake_swift.KEY_HEADER] == spec['temp_url_key']

    worker = agent.open_store(spec)
    worker.put('servers/s1/status.json', b'{}')
    assert worker.create('results/t1.json', b'one')
    assert not worker.create('results/t1.json', b'two')
    for n in range(3):
        client.put('checkpoints/t%d/latest.json' % n, b'x')

    assert client.get('results/t1.json') == b'one'
    assert worker.get('missing') is None
    assert client.list('checkpoints/') == [
        'checkpoints/t%d/latest.json' % n for n in range(3)]


def test_tempurl_with_a_wrong_key_is_refused(swift, conn):
    _, spec = stores.open_store('swift', 'j-1', conn, create=True)
    thief = agent.TempUrlStore(spec['url'], 'not-the-key')
    with pytest.raises(OSError):
        thief.put('results/t1.json', b'forged')
    assert 'results/t1.json' not in swift.containers['opie-bot-j-1'][
        'objects']


def test_reopening_reads_the_key_back_and_destroy_removes_all(swift, conn):
    _, spec = stores.open_store('swift', 'j-1', conn, create=True)
    again, spec2 = stores.open_store('swift', 'j-1', conn, create=False)
    assert spec2 == spec
    again.put('a', b'1')
    again.put('b/c', b'2')
    again.put('d', b'3')

    again.destroy()

    assert 'opie-bot-j-1' not in swift.containers


def test_bad_store_urls_say_what_to_give(conn):
    with pytest.raises(stores.StoreError, match='file:///ABSOLUTE/PATH'):
        stores.open_store('file://relative', 'j', conn, create=True)
    with pytest.raises(stores.StoreError, match='HTTP 404'):
        stores.open_store('swift', 'j-none', conn, create=False)


def test_an_object_over_the_cap_is_not_read_whole(swift, conn):
    # A task may put an object of any size in its job's container: no
    # more than the cap (and a byte) is read, by the client or an agent.
    client, spec = stores.open_store('swift', 'j-1', conn, create=True)
    worker = agent.open_store(spec)
    client.put('results/t1.json', b'x' * 11)

    for store in (client, worker):
        assert store.get('results/t1.json', 11) == b'x' * 11
        with pytest.raises(ValueError, match='larger than 10 bytes'):
            store.get('results/t1.json', 10)
        assert store.get('missing', 10) is None
