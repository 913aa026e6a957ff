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

"""``run --controller`` under attack: a careless tenant, a second
client, a fuzzed store (fake Nova and agents, no timing: the controller
runs in-process when the tenant's side waits, as in test_controller)."""
import json
import types

import pytest

from opie.bot import agent
from opie.bot import controller
from opie.bot.controller import layout
from opie.bot.controller import remote
from opie.bot.openstack import live
from tests.unit.bot import fake_nova
from tests.unit.bot import test_controller

Tenant = test_controller.Tenant


@pytest.fixture
def tenant(tmp_path, monkeypatch, capsys):
    return Tenant(tmp_path, monkeypatch, capsys)


def store_path(tenant, key):
    return tenant.dir / 'store' / tenant.job_id() / key


def events(tenant):
    return [r['event'] for r in tenant.records()]


# -- a cancel whose tenant command does not wait to the end -----------------

def test_a_cancel_the_controller_did_is_seen_by_the_tenant(tenant):
    """The tenant's ``cancel`` is interrupted (Ctrl-C) while it waits;
    the controller still cancels the job and deletes itself.  The
    tenant's side must then see a cancelled job, not a paused one that
    ``resume`` would run again."""
    assert tenant.launch()[0] == 0
    job_id = tenant.job_id()

    def interrupted(seconds):
        tenant.serve()
        raise KeyboardInterrupt()
    tenant.monkeypatch.setattr(controller, '_pause', interrupted)
    code, out, err = tenant.cli('cancel', job_id)
    assert 'interrupted' in err
    assert tenant.nova.live() == []

    assert tenant.status()['status'] == 'cancelled'
    code, out, err = tenant.cli('resume', job_id, '--quiet')
    assert code != 0 and 'cancelled' in err
    assert tenant.nova.live() == []


# -- a tenant killed during run --controller ---------------------------------

def test_a_tenant_killed_after_the_controller_create_leaves_nothing(tenant):
    """SIGKILL right after ``controller_create`` is journalled: the
    server id is in the journal's records but not yet in its settings
    nor in the store (so the controller cannot delete itself).  The
    tenant's side must still know the controller: resume is refused
    while it runs, and it is deleted once the job is over."""
    # A SIGKILL runs no handler: launch cannot undo anything.
    tenant.monkeypatch.setattr(controller._Made, 'undo', lambda self: None)
    code, _, _ = tenant.run('--controller', kill_after=2)
    assert code == 'killed'
    assert events(tenant)[-1] == 'controller_create'
    sid, _ = tenant.controller()

    st = tenant.status()
    assert (st['status'], st['controller']['server']) == ('running', sid)
    code, out, err = tenant.cli('resume', tenant.job_id(), '--quiet')
    assert code != 0 and 'runs on controller server %s' % sid in err

    assert tenant.serve() == 'ended'
    assert tenant.status()['status'] == 'done'
    assert tenant.nova.live() == []


def test_a_launch_interrupted_during_the_create_call_leaves_nothing(tenant):
    """Ctrl-C while Nova creates the controller: Nova made the server
    (with the journalled nonce) but the answer never came back."""
    create = tenant.nova.servers.create

    def lost(*args, **kwargs):
        create(*args, **kwargs)
        raise KeyboardInterrupt()
    tenant.monkeypatch.setattr(tenant.nova.servers, 'create', lost)

    tenant.launch()

    assert tenant.nova.live() == []


# -- the store: errors, stale reads, garbage ---------------------------------

def test_one_failed_store_read_does_not_kill_the_controller(tenant):
    """A Swift 503 (here an NFS EIO) on one heartbeat: a local client
    would retry its poll; the controller must not die of it, leaving its
    server up and the job undriven."""
    assert tenant.launch()[0] == 0
    get = agent.DirStore.get
    failed = []

    def flaky(self, key, limit=None):
        if key == layout.CANCEL_KEY and not failed:
            failed.append(key)
            raise OSError(5, 'Input/output error')
        return get(self, key, limit)
    tenant.monkeypatch.setattr(agent.DirStore, 'get', flaky)

    assert tenant.serve() == 'ended'

    assert failed
    assert tenant.nova.live() == []
    assert tenant.status()['status'] == 'done'


def test_a_stale_published_journal_copies_no_record_twice(tenant):
    """Swift may answer a GET with an older version of an overwritten
    object: ``status`` then reads fewer records than it copied."""
    assert tenant.launch()[0] == 0
    assert tenant.serve(kill_after=1, event='task_finish') == 'killed'
    path = store_path(tenant, layout.JOURNAL_KEY)
    full = json.loads(path.read_text())
    assert len(full['records']) > 2
    tenant.status()
    copied = len(tenant.records())

    path.write_text(json.dumps(dict(full, records=full['records'][:2])))
    tenant.status()
    path.write_text(json.dumps(full))
    tenant.status()

    assert len(tenant.records()) == copied


@pytest.mark.parametrize('garbage', [
    b'{"records": [{"t": 1',                    # cut short
    b'\xff\xfe not json',
    b'[]',
    b'{}',
    b'{"records": "abc", "heartbeat": 1}',
    b'{"records": [1, 2], "heartbeat": 1}',
    b'{"records": [{"event": "done"}], "heartbeat": 1}',
    b'{"records": [], "heartbeat": "yesterday"}',
    b'{"records": [], "heartbeat": 1e400}',
])
def test_garbage_in_the_store_does_not_stop_a_cancel(tenant, garbage):
    """Whatever ``controller/journal.json`` holds, ``status`` answers and
    ``cancel`` deletes every server of the job and the controller."""
    assert tenant.launch()[0] == 0
    assert tenant.serve(kill_after=1, event='server_active') == 'killed'
    assert tenant.job_servers()
    store_path(tenant, layout.JOURNAL_KEY).write_bytes(garbage)

    code, out, err = tenant.cli('status', tenant.job_id())
    assert code == 0, (out, err)
    code, out, err = tenant.cli('cancel', tenant.job_id())

    assert code == 0, (out, err)
    assert tenant.nova.live() == []


# -- names ---------------------------------------------------------------

def test_the_longest_job_name_fits_nova_tags(tenant, monkeypatch):
    """Nova refuses a tag longer than 60 characters (the schema sizes
    job names for ``opie-job-<job id>``)."""
    name = 'n' * 44
    path = tenant.dir / 'tiny.yaml'
    path.write_text(path.read_text().replace('name: tiny', 'name: ' + name))
    create = tenant.nova.servers.create
    tags = []

    def checked(*args, **kwargs):
        tags.extend(kwargs.get('tags') or [])
        return create(*args, **kwargs)
    monkeypatch.setattr(tenant.nova.servers, 'create', checked)

    code, out, err = tenant.launch()

    assert code == 0, (out, err)
    assert tags and max(len(t) for t in tags) <= 60, tags


# -- the report ------------------------------------------------------------

def test_a_status_while_the_controller_ends_loses_no_report(tenant):
    """The controller has published the job's end and is writing the
    report when the tenant asks ``status``: the report must reach the
    tenant all the same (Nova ends the controller's process with its
    server)."""
    assert tenant.launch()[0] == 0
    sid, _ = tenant.controller()
    build = live.build_report

    # A heartbeat right after the job's last record, as the loop's
    # last poll may give.
    tenant.monkeypatch.setattr(remote, 'AT_ONCE',
                               remote.AT_ONCE + ('done',))

    def meanwhile(ctx):
        tenant.status()
        if tenant.nova.servers.all[sid].status == 'DELETED':
            raise fake_nova.Killed()
        return build(ctx)
    tenant.monkeypatch.setattr(live, 'build_report', meanwhile)

    tenant.serve()
    tenant.status()

    assert tenant.report()['result']['deadline_met']


def test_a_server_id_planted_in_the_store_is_not_deleted(tenant):
    """The job's agents (the tenant's task commands) can write the
    store: ``controller/server.json`` naming another server of the
    project must not make the controller delete it."""
    assert tenant.launch()[0] == 0
    sid, _ = tenant.controller()
    bystander = tenant.nova.servers.all['bystander'] = fake_nova.Server(
        'bystander', 'web', 'small', {}, [])
    bystander.status = 'ACTIVE'
    store = agent.DirStore(str(store_path(tenant, '')))
    agent.write_json(store, layout.SERVER_KEY, {'server': 'bystander'})

    assert tenant.serve() == 'ended'
    tenant.status()

    assert tenant.nova.live() == ['bystander']


@pytest.mark.parametrize('verb', ['cancel', 'resume'])
def test_the_report_of_a_job_the_controller_ended_reaches_the_tenant(
        tenant, verb):
    """A tenant who ``cancel``s or ``resume``s a job its controller
    already finished, before any ``status``: the first takes the job
    back (no ``status`` copies anything after), the second deletes the
    report from the store with the job's other objects."""
    assert tenant.launch()[0] == 0
    assert tenant.serve() == 'ended'

    tenant.cli(verb, tenant.job_id())
    tenant.status()

    assert tenant.report()['result']['deadline_met']
    assert tenant.status()['status'] == 'done'


def test_a_credential_keystone_failed_to_delete_is_not_said_deleted(tenant):
    """Keystone answers the delete with a 503: the credential lives on,
    and the next ``status`` deletes it."""
    tenant.keystone()
    assert tenant.launch()[0] == 0
    assert tenant.serve() == 'ended'
    delete = tenant.keys.delete
    tenant.keys.delete = lambda url, raise_exc=True: \
        types.SimpleNamespace(status_code=503)

    st = tenant.status()

    assert st['status'] == 'done'
    assert st['controller']['credential_deleted'] is False
    assert 'credential_delete' not in events(tenant)
    tenant.keys.delete = delete
    assert tenant.status()['controller']['credential_deleted'] is True
    assert tenant.keys.live() == []
