"""How NovaCloud reads server states into events, and whom it deletes."""
import types

from novaclient import exceptions as nova_exc

from opie.bot import ports
from opie.bot import stores as memory
from opie.bot.openstack import nova
from tests.unit.bot import helpers


class FakeServers:
    def __init__(self):
        self.status = {}
        self.tags = {}
        self.deleted = []
        self.unshelved = []

    def get(self, sid):
        if sid not in self.status:
            raise nova_exc.NotFound(404)
        return types.SimpleNamespace(id=sid, status=self.status[sid],
                                     name='n-' + sid,
                                     tags=self.tags.get(sid, []))

    def delete(self, sid):
        self.deleted.append(sid)

    def unshelve(self, sid):
        self.unshelved.append(sid)

    def list(self, search_opts):
        return [types.SimpleNamespace(id=sid, created=created,
                                      metadata=meta)
                for sid, created, meta in getattr(self, 'listed', [])]


class FakeImages:
    """Nova's image API, which may ignore the filters it is given."""

    def __init__(self):
        self.deleted = []
        self.images = [
            {'id': 'img-1', 'name': 'j-1-s-shelved',
             'metadata': {'instance_uuid': 's'}},
            # Another server of the project, renamed like the job's.
            {'id': 'other', 'name': 'j-1-s-shelved',
             'metadata': {'instance_uuid': 'x'}},
            # A snapshot of the job's server that someone else took.
            {'id': 'theirs', 'name': 'backup of s',
             'metadata': {'instance_uuid': 's'}}]

    def get(self, url, params=None, raise_exc=True):
        return types.SimpleNamespace(json=lambda: {'images': self.images})

    def delete(self, url, raise_exc=True):
        self.deleted.append(url)


class Clock:
    def now(self):
        return 7.0


def make():
    conn = helpers.connect({'OS_AUTH_TYPE': 'admin_token',
                            'OS_ENDPOINT': 'http://127.0.0.1:1/v2.1',
                            'OS_TOKEN': 't'})
    journal = memory.MemoryStateStore()
    cloud = nova.NovaCloud(conn, 'j-1', 'img', 'none', journal, Clock(),
                           user_data=None, unshelve_every_s=0.0)
    cloud.nova = types.SimpleNamespace(servers=FakeServers())
    cloud.images = FakeImages()
    events = []
    cloud.watch(events.append)
    return cloud, cloud.nova.servers, journal, events


def test_states_become_events_once():
    cloud, servers, _, events = make()
    for sid in ('a', 'b'):
        cloud.adopt(sid, sid, nova.BUILD)
        servers.tags[sid] = [cloud.tag]
    servers.status.update(a='ACTIVE', b='ACTIVE')
    cloud.poll(full=True)
    servers.status['a'] = 'SHELVED_OFFLOADED'
    cloud.poll(full=True)
    servers.status['a'] = 'ACTIVE'
    del servers.status['b']
    cloud.poll(full=True)
    cloud.poll(full=True)

    assert [(e.kind, e.server_id) for e in events] == [
        (ports.ACTIVE, 'a'), (ports.ACTIVE, 'b'), (ports.HIBERNATED, 'a'),
        (ports.RESUMED, 'a'), (ports.TERMINATED, 'b')]
    # A shelved server is asked to come back while it is shelved.
    assert servers.unshelved == ['a']


def test_own_delete_is_no_preemption():
    cloud, servers, journal, events = make()
    cloud.adopt('a', 'a', nova.ACTIVE)
    servers.status['a'] = 'ACTIVE'
    servers.tags['a'] = [cloud.tag]

    cloud.delete_server('a')
    del servers.status['a']
    cloud.poll(full=True)

    assert events == []
    assert servers.deleted == ['a']
    assert [r['event'] for r in journal.records()] == ['server_deleting']


def test_server_without_the_jobs_tag_is_never_deleted():
    cloud, servers, journal, _ = make()
    cloud.adopt('x', 'x', nova.ACTIVE)
    servers.status['x'] = 'ACTIVE'
    servers.tags['x'] = ['someone-else']

    cloud.delete_server('x')

    assert servers.deleted == []
    assert [r['event'] for r in journal.records()] == ['refused_delete']


def test_error_at_boot_is_lost_and_deleted():
    cloud, servers, journal, events = make()
    cloud.adopt('e', 'e', nova.BUILD)
    servers.status['e'] = 'ERROR'
    servers.tags['e'] = [cloud.tag]

    cloud.poll(full=True)

    assert [e.kind for e in events] == [ports.TERMINATED]
    assert servers.deleted == ['e']
    assert [r['event'] for r in journal.records()] == [
        'server_error', 'server_deleting']


def test_deleting_a_shelved_server_deletes_its_shelve_image():
    cloud, servers, _, _ = make()
    cloud.adopt('s', 's', nova.SHELVED)
    servers.status['s'] = 'SHELVED_OFFLOADED'
    servers.tags['s'] = [cloud.tag]

    cloud.delete_server('s')

    assert cloud.images.deleted == ['/images/img-1']
    assert cloud.journal.records()[-1]['image'] == 'img-1'


def test_an_unjournalled_server_is_the_jobs_only_by_its_nonce():
    cloud, servers, _, _ = make()
    cloud.adopt('known', 'p1', nova.ACTIVE)
    servers.listed = [
        # A copy of the job's server, nonce and all, made after it.
        ('copy', '2026-11-23T10:00:05Z', {nova.NONCE: 'n2'}),
        ('ours', '2026-11-23T10:00:01Z', {nova.NONCE: 'n2'}),
        ('known', '2026-11-23T09:00:00Z', {nova.NONCE: 'n1'}),
        ('tagged', '2026-11-23T09:00:00Z', {}),
        ('other', '2026-11-23T09:00:00Z', {nova.NONCE: 'n9'})]

    assert cloud.orphans({'n1': 'p1', 'n2': 'm3'}) == [('ours', 'm3')]
