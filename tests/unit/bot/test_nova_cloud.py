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

"""How NovaCloud reads server states into events, and whom it deletes."""
import types

import pytest

from novaclient import exceptions as nova_exc

from opie.core import contract
from opie.bot.hads import interfaces
from opie.bot.state import stores as memory
from opie.bot.openstack import nova
from tests.unit.bot import helpers


class FakeServers:
    def __init__(self):
        self.status = {}
        self.tags = {}
        self.metadata = {}
        self.deleted = []
        self.unshelved = []

    def get(self, sid):
        if sid not in self.status:
            raise nova_exc.NotFound(404)
        return types.SimpleNamespace(id=sid, status=self.status[sid],
                                     name='n-' + sid,
                                     tags=self.tags.get(sid, []),
                                     metadata=self.metadata.get(sid, {}))

    def delete(self, sid):
        self.deleted.append(sid)

    def unshelve(self, sid):
        self.unshelved.append(sid)

    def list(self, search_opts):
        return [types.SimpleNamespace(
            id=sid, created=created, metadata=meta, user_id=user,
            flavor={'original_name': flavor}, image={'id': image})
            for sid, created, meta, user, flavor, image in self.listed]


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


# The job's t0: 2026-11-23T10:00:00Z.
T0 = 1795428000.0


class Clock:
    def now(self):
        return 7.0

    def job_time(self, wall):
        return wall - T0


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
        (interfaces.ACTIVE, 'a'), (interfaces.ACTIVE, 'b'),
        (interfaces.HIBERNATED, 'a'), (interfaces.RESUMED, 'a'),
        (interfaces.TERMINATED, 'b')]
    # A shelved server is asked to come back while it is shelved.
    assert servers.unshelved == ['a']


@pytest.mark.parametrize('seen_building', [True, False])
def test_an_active_state_no_poll_saw_still_boots_the_server(seen_building):
    # Shelved between two polls (or while no client ran) before any poll
    # saw it ACTIVE: the scheduler must still hear that it booted, or
    # the server never runs a task.
    cloud, servers, _, events = make()
    cloud.adopt('a', 'a', nova.BUILD)
    servers.tags['a'] = [cloud.tag]
    if seen_building:
        servers.status['a'] = 'BUILD'
        cloud.poll(full=True)
    servers.status['a'] = 'SHELVED_OFFLOADED'
    cloud.poll(full=True)
    servers.status['a'] = 'ACTIVE'
    cloud.poll(full=True)
    cloud.poll(full=True)
    assert [e.kind for e in events] == [
        interfaces.HIBERNATED, interfaces.RESUMED, interfaces.ACTIVE]


def test_own_delete_is_no_preemption():
    cloud, servers, journal, events = make()
    cloud.adopt('a', 'a', nova.ACTIVE)
    servers.status['a'] = 'ACTIVE'
    servers.tags['a'] = [cloud.tag]

    assert cloud.delete_server('a') is False
    # Asked again (a hung task's server, then the job's end): still its
    # own delete, whatever Nova shows of it by then.
    servers.status['a'] = 'DELETED'
    assert cloud.delete_server('a') is False
    del servers.status['a']
    assert cloud.delete_server('a') is False
    cloud.poll(full=True)

    assert events == []
    assert servers.deleted == ['a', 'a']
    assert [r['event'] for r in journal.records()] == [
        'server_deleting', 'server_deleting']


@pytest.mark.parametrize('tagged', [True, False])
@pytest.mark.parametrize('status', [None, 'DELETED', 'SOFT_DELETED'])
def test_a_server_the_cloud_ended_first_is_reported_ended(status, tagged):
    # Preempted after the last poll, before the job's delete: the delete
    # says so (the executor journals a preemption), and no poll tells it
    # again. Nova drops a deleted server's tags: that is no take-over.
    cloud, servers, journal, events = make()
    cloud.adopt('a', 'a', nova.ACTIVE)
    if tagged:
        servers.tags['a'] = [cloud.tag]
    if status is not None:
        servers.status['a'] = status

    assert cloud.delete_server('a') is True
    cloud.poll(full=True)

    assert events == []
    # Only a soft-deleted server of the job's is purged; no intent is
    # journalled (a resumed client finds it ended by the cloud too).
    assert servers.deleted == (['a'] if status and tagged else [])
    assert journal.records() == []


def test_server_without_the_jobs_tag_is_never_deleted():
    cloud, servers, journal, _ = make()
    cloud.adopt('x', 'x', nova.ACTIVE)
    servers.status['x'] = 'ACTIVE'
    servers.tags['x'] = ['someone-else']

    cloud.delete_server('x')

    assert servers.deleted == []
    assert [r['event'] for r in journal.records()] == ['refused_delete']


def test_error_at_boot_is_a_boot_failure_deleted():
    cloud, servers, journal, events = make()
    cloud.adopt('e', 'e', nova.BUILD)
    servers.status['e'] = 'ERROR'
    servers.tags['e'] = [cloud.tag]

    cloud.poll(full=True)

    # Journalled and deleted before the scheduler hears of it, so a
    # client killed in between deletes it on resume.
    assert [e.kind for e in events] == [interfaces.BOOT_FAILED]
    assert servers.deleted == ['e']
    assert [r['event'] for r in journal.records()] == [
        'server_error', 'server_deleting']


def test_cancel_touches_no_image_and_names_what_it_kept():
    # Nova deletes a shelved server's snapshot itself; any image the
    # client could find by name or property, a member can forge.
    cloud, servers, _, _ = make()
    for sid, tags in (('s', [cloud.tag]), ('taken', ['mine now'])):
        cloud.adopt(sid, sid, nova.SHELVED)
        servers.status[sid] = 'SHELVED_OFFLOADED'
        servers.tags[sid] = tags

    assert cloud.delete_all() == ['taken']
    assert servers.deleted == ['s']
    assert cloud.images.deleted == []


def server(sid, created, nonce, user='u-1', flavor='small', image='img'):
    return (sid, created, {nova.NONCE: nonce}, user, flavor, image)


INTENT = {'key': 'm3', 'flavor': 'small', 'image': 'img',
          # 2026-11-23T10:00:00Z
          'wall': 1795428000.0}


def test_an_unjournalled_server_is_the_jobs_only_if_nothing_else_fits():
    cloud, servers, _, _ = make()
    cloud.session = types.SimpleNamespace(get_user_id=lambda: 'u-1')
    servers.listed = [
        server('ours', '2026-11-23T10:00:01Z', 'n2'),
        # Its nonce copied onto an older server, a server of another
        # user, another flavor, another image, and a known server.
        server('older', '2026-11-20T10:00:01Z', 'n2'),
        server('theirs', '2026-11-23T10:00:01Z', 'n2', user='u-2'),
        server('bigger', '2026-11-23T10:00:01Z', 'n2', flavor='large'),
        server('other-image', '2026-11-23T10:00:01Z', 'n2', image='x'),
        server('known', '2026-11-23T10:00:01Z', 'n2')]

    assert cloud.orphans({'n2': INTENT}, {'known': {}}) == [('ours', 'm3')]

    # One more that fits: which is the job's cannot be told; none is.
    servers.listed.append(server('twin', '2026-11-23T10:00:01Z', 'n2'))
    assert cloud.orphans({'n2': INTENT}, {'known': {}}) == []
    assert cloud.journal.records()[-1] == {
        't': 7.0, 'event': 'orphan_ambiguous', 'key': 'm3',
        'servers': ['ours', 'twin']}


# -- the preemption notice -------------------------------------------------

def noticed(metadata_by_poll, sid='a'):
    """The events and journal of polls of ACTIVE server ``sid`` whose
    metadata is, at each poll, the next of ``metadata_by_poll``."""
    cloud, servers, journal, events = make()
    cloud.adopt(sid, sid, nova.ACTIVE)
    servers.status[sid] = 'ACTIVE'
    for metadata in metadata_by_poll:
        servers.metadata[sid] = metadata
        cloud.poll(full=True)
    return events, journal.records()


def notice(value):
    return {contract.NOTICE_KEY: value, 'opie-job': 'j-1'}


@pytest.mark.parametrize('value', [
    '2026-11-23T10:05:00Z', '2026-11-23T11:05:00+01:00',
    '2026-11-23T10:05:00', '2026-11-23T10:05:00.000000Z'])
def test_a_notice_is_reported_once_in_job_time(value):
    # Each poll lists the server again (changes-since looks back
    # SINCE_MARGIN): the executor hears of the notice once.
    events, journal = noticed([notice(value)] * 3)
    assert [(e.kind, e.server_id, e.at) for e in events] == [
        (interfaces.NOTICE, 'a', 300.0)]
    assert journal == []


def test_a_withdrawn_notice_is_journalled_and_a_new_one_reported():
    events, journal = noticed([
        notice('2026-11-23T10:05:00Z'), {}, {},
        notice('2026-11-23T10:09:00Z')])
    assert [(e.kind, e.at) for e in events] == [
        (interfaces.NOTICE, 300.0), (interfaces.NOTICE, 540.0)]
    assert journal == [{'t': 7.0, 'event': 'notice_withdrawn',
                        'server': 'a'}]


@pytest.mark.parametrize('value', [
    'soon', '', ' 2026-11-23T10:05:00Z', '2026-11-23T10:05:00Z\n',
    '2026-13-01T00:00:00Z', '2026-11-23T25:00:00Z', '1795428300',
    '2026-11-23 10:05:00Z', '2026-11-23x10:05:00Z', '2026-W47-1T10:05:00Z',
    '\u0662\u0660\u0662\u0666-11-23T10:05:00Z',
    'x' * 100000, '\x00', None, 1795428300, ['2026-11-23T10:05:00Z']])
def test_an_unusable_value_is_journalled_once_and_ignored(value):
    # The owner (any member of the project) may write anything there.
    events, journal = noticed([notice(value), notice(value),
                               notice('also bad'), notice(value)])
    # None is no value: the first bad one is 'also bad'; its removal
    # withdraws no notice.
    first = 'also bad' if value is None else value
    assert events == []
    assert journal == [{'t': 7.0, 'event': 'notice_unusable', 'server': 'a',
                        'value': repr(first)[:nova.NOTICE_VALUE_SHOWN]}]


@pytest.mark.parametrize('value, at', [
    ('2000-01-01T00:00:00Z', 946684800.0 - T0),
    ('0001-01-01T00:00:00+14:00', -62135647200.0 - T0),
    ('9999-12-31T23:59:59-14:00', 253402351199.0 - T0)])
def test_a_past_or_far_notice_is_reported_as_it_is(value, at):
    # The executor copes with either: a past one leaves it no time to
    # save anything, a far one is after every run's end.
    events, _ = noticed([notice(value)])
    assert [(e.kind, e.at) for e in events] == [(interfaces.NOTICE, at)]


def test_a_notice_left_from_before_a_shelve_is_no_notice():
    # OPIE stops a victim, then shelves it: the key stays, and is stale
    # once the server is unshelved.
    # (Now is job time 7.)
    cloud, servers, journal, events = make()
    cloud.adopt('a', 'a', nova.ACTIVE)
    given, later = notice('2026-11-23T10:00:05Z'), notice(
        '2026-11-23T11:00:00Z')
    for status, metadata in (('ACTIVE', {}), ('ACTIVE', given),
                             ('SHELVED_OFFLOADED', given),
                             ('ACTIVE', given), ('ACTIVE', given),
                             ('ACTIVE', later)):
        servers.status['a'] = status
        servers.metadata['a'] = metadata
        cloud.poll(full=True)
    assert [(e.kind, e.at) for e in events] == [
        (interfaces.NOTICE, 5.0), (interfaces.HIBERNATED, None),
        (interfaces.RESUMED, None), (interfaces.NOTICE, 3600.0)]
    assert journal.records() == []


def test_a_server_back_from_a_shelve_with_a_new_notice_is_told():
    cloud, servers, _, events = make()
    cloud.adopt('a', 'a', nova.SHELVED)
    servers.status['a'] = 'ACTIVE'
    servers.metadata['a'] = notice('2026-11-23T10:00:08Z')
    cloud.poll(full=True)
    assert [(e.kind, e.at) for e in events] == [
        (interfaces.RESUMED, None), (interfaces.ACTIVE, None),
        (interfaces.NOTICE, 8.0)]


def test_a_notice_on_a_server_not_yet_active_comes_after_active():
    cloud, servers, _, events = make()
    cloud.adopt('a', 'a', nova.BUILD)
    servers.metadata['a'] = notice('2026-11-23T10:05:00Z')
    for status in ('BUILD', 'ACTIVE', 'ACTIVE'):
        servers.status['a'] = status
        cloud.poll(full=True)
    assert [e.kind for e in events] == [interfaces.ACTIVE,
                                        interfaces.NOTICE]
