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

"""``run --controller`` on the real client path (fake Nova, agents and
Keystone): the tenant's client starts a controller server and exits; the
controller (run here, in-process, from the settings in its user data)
drives the job and deletes itself; the tenant's ``status``, ``resume``
and ``cancel`` meet it in the job's store."""
import json
import types

from keystoneauth1 import exceptions as ks_exceptions
import pytest

from opie.bot.cli import common
from opie.bot import controller
from opie.bot.controller import layout
from opie.bot.controller import remote
from opie.bot.report import watch
from opie.bot.openstack import credentials
from tests.unit.bot import fake_nova
from tests.unit.bot import tenant as tenant_mod
from tests.unit.bot import test_lifecycle
from tests.unit.bot import test_task_io as io


class Keystone:
    """Keystone's application credentials API, as the tenant sees it."""

    def __init__(self, refuse=False):
        self.refuse = refuse
        self.made = {}
        self.deleted = []

    def post(self, url, json=None):
        if self.refuse:
            raise ks_exceptions.Forbidden(
                message='You are not authorized to perform the requested '
                'action: identity:create_application_credential.',
                http_status=403)
        body = json['application_credential']
        cid = 'cred-%d' % (len(self.made) + 1)
        self.made[cid] = body
        return types.SimpleNamespace(json=lambda: {'application_credential':
                                                   dict(body, id=cid,
                                                        secret='s3cr3t-' +
                                                        cid)})

    def delete(self, url, raise_exc=True):
        self.deleted.append(url.rsplit('/', 1)[1])
        return types.SimpleNamespace(status_code=204)

    def live(self):
        return sorted(set(self.made) - set(self.deleted))


class Tenant(tenant_mod.Tenant):

    def __init__(self, tmp_path, monkeypatch, capsys, template=None):
        super().__init__(tmp_path, monkeypatch, capsys,
                         template or test_lifecycle.JOB)
        # Nothing waits: a tenant's pause lets the controller's process
        # run (the functional tests run it for real, as a guest).
        monkeypatch.setattr(controller, '_pause', lambda s: self.serve())

    def keystone(self, refuse=False):
        self.keys = Keystone(refuse)
        self.monkeypatch.setattr(credentials, 'keystone_less',
                                 lambda conn: False)
        self.monkeypatch.setattr(credentials, '_access', lambda conn: (
            'u-1', ['member', 'reader']))
        self.monkeypatch.setattr(credentials, '_identity',
                                 lambda conn: self.keys)

    def launch(self, *extra):
        return self.run('--controller', *extra)

    def controller(self):
        (sid, config), = self.nova.controllers.items()
        return sid, config

    def serve(self, kill_after=None, event=None):
        """The controller's process on its server, once: it runs its job
        to the end (or is killed), in its own home directory."""
        sid, config = self.controller()
        if self.nova.servers.all[sid].status == 'DELETED':
            return 'gone'
        if config['cloud'].get('auth_type') == 'v3applicationcredential':
            # The fake cloud knows one token; the credential is checked
            # in test_the_credential_is_narrow_and_deleted_at_the_end.
            config = dict(config, cloud={'auth_type': 'admin_token', 'auth': {
                'endpoint': 'http://127.0.0.1:1/v2.1', 'token': 'tok'}})
        opened = fake_nova.killer(self.monkeypatch, kill_after, event)
        home = self.dir / 'controller'
        try:
            with self.monkeypatch.context() as m:
                m.setenv('HOME', str(home))
                remote.main(config)
            return 'ended'
        except fake_nova.Killed:
            return 'killed'
        finally:
            for journal in opened:
                journal.close()
            fake_nova.killer(self.monkeypatch, None)

    def job_servers(self):
        return [s for s in self.nova.live()
                if s not in self.nova.controllers]

    def status(self):
        code, out, err = self.cli('status', self.job_id(), '-f', 'json')
        assert code == 0, (out, err)
        return json.loads(out)


@pytest.fixture
def tenant(tmp_path, monkeypatch, capsys):
    return Tenant(tmp_path, monkeypatch, capsys)


def test_run_starts_one_normal_controller_and_returns(tenant):
    code, out, err = tenant.launch()

    assert code == 0, (out, err)
    (sid, config), = tenant.nova.controllers.items()
    server = tenant.nova.servers.all[sid]
    # Normal: the job's smallest flavor, not its preemptible twin.
    assert server.flavor['original_name'] == 'small'
    assert server.tags == [layout.tag_for(tenant.job_id())]
    # Nothing of the job runs on the tenant's side.
    assert tenant.nova.live() == [sid]
    assert 'controller server %s' % sid in out
    st = tenant.status()
    assert st['status'] == 'running'
    assert st['controller']['server'] == sid


def test_the_controller_runs_the_job_and_deletes_itself(tenant):
    assert tenant.launch()[0] == 0
    job_id = tenant.job_id()

    assert tenant.serve() == 'ended'

    assert tenant.nova.live() == []
    assert tenant.results() == ['t1.json', 't2.json', 't3.json']
    st = tenant.status()
    assert st['status'] == 'done'
    assert st['tasks_by_state']['done'] == 3
    assert st['controller']['server_state'] == controller.GONE
    # The report the controller left in the store, now the tenant's.
    assert tenant.report()['result']['deadline_met']
    code, out, _ = tenant.cli('status', job_id)
    assert 'deleted after the job' in out


def test_a_dead_controller_is_said_and_resume_continues_here(tenant):
    assert tenant.launch()[0] == 0
    job_id = tenant.job_id()
    assert tenant.serve(kill_after=1, event='task_finish') == 'killed'
    sid, _ = tenant.controller()
    # Its server died with it (Nova shows it stopped).
    tenant.nova.servers.all[sid].status = 'SHUTOFF'

    code, out, err = tenant.cli('status', job_id)
    assert code == 0, err
    # Not gone from Nova: it may still run (test_controller_robust).
    assert 'job %s: running' % job_id in out
    assert 'server %s SHUTOFF: it may still drive the job' % sid in out
    # Done: committed in the store (the controller may have died before
    # publishing their ends).
    finished = {name[:-len('.json')] for name in tenant.results()}
    assert finished

    code, out, err = tenant.cli('resume', job_id, '--quiet')

    assert code == 0, (out, err)
    assert tenant.nova.live() == []     # the controller too
    records = tenant.records()
    resumed = [r['event'] for r in records].index('resume')
    assert not [r for r in records[resumed:] if r['event'] == 'task_start'
                and r['task'] in finished]
    assert tenant.results() == ['t1.json', 't2.json', 't3.json']
    assert tenant.status()['status'] == 'done'


def test_resume_is_refused_while_the_controller_lives(tenant):
    assert tenant.launch()[0] == 0
    before = tenant.records()

    code, out, err = tenant.cli('resume', tenant.job_id())

    assert code == common.EXIT_INPUT
    assert out == '' and err.count('\n') == 1
    assert 'runs on controller server' in err
    assert tenant.records() == before
    assert len(tenant.nova.live()) == 1


def test_cancel_while_the_controller_runs(tenant):
    assert tenant.launch()[0] == 0
    job_id = tenant.job_id()
    # A result an agent committed before the cancel.
    result = tenant.dir / 'store' / job_id / 'results' / 't1.json'
    result.parent.mkdir(parents=True)
    result.write_text(json.dumps({'task': 't1', 'exit_status': 0,
                                  'attempt': 1, 'server': 'small-1',
                                  'output': '', 'ended_at': None}))

    code, out, err = tenant.cli('cancel', job_id)

    assert code == 0, (out, err)
    assert 'cancel requested' in out
    events = [r['event'] for r in tenant.records()]
    # The controller cancelled the job itself and went: no fencing.
    assert 'cancelled' in events and 'controller_deleting' not in events
    assert tenant.nova.live() == []
    assert result.exists()
    assert tenant.status()['status'] == 'cancelled'


def test_run_controller_twice_for_one_job_file_is_refused(tenant):
    assert tenant.launch()[0] == 0
    first = tenant.job_id()

    code, out, err = tenant.launch()

    assert code == common.EXIT_INPUT
    assert out == '' and err.count('\n') == 1
    assert first in err and 'opie-bot cancel %s' % first in err
    assert tenant.job_id() == first
    assert len(tenant.nova.live()) == 1


def test_a_credential_keystone_refuses_creates_nothing(tenant):
    tenant.keystone(refuse=True)

    code, out, err = tenant.launch()

    assert code == common.EXIT_INPUT
    assert out == '' and err.count('\n') == 1
    assert 'keystone refused' in err and 'nothing was created' in err
    assert tenant.nova.live() == []
    assert not (tenant.dir / 'store').exists()
    assert list(tenant.dir.glob('jobs/*')) == []


def test_the_credential_is_narrow_and_deleted_at_the_end(tenant):
    tenant.keystone()

    code, out, err = tenant.launch()

    assert code == 0, (out, err)
    (cid, body), = tenant.keys.made.items()
    assert body['roles'] == [{'name': 'member'}]
    assert body['unrestricted'] is False
    assert body['expires_at']
    _, config = tenant.controller()
    assert config['cloud']['auth_type'] == 'v3applicationcredential'
    assert config['cloud']['auth']['application_credential_id'] == cid
    secret = config['cloud']['auth']['application_credential_secret']
    assert secret not in json.dumps(tenant.records()) + out + err
    assert tenant.serve() == 'ended'

    tenant.status()

    assert tenant.keys.live() == []
    assert tenant.nova.live() == []


def test_a_tenant_without_member_gets_no_credential(tenant, monkeypatch):
    tenant.keystone()
    monkeypatch.setattr(credentials, '_access', lambda conn: ('u', ['admin']))

    code, _, err = tenant.launch()

    assert code == common.EXIT_INPUT and "'member'" in err
    assert tenant.keys.made == {} and tenant.nova.live() == []


@pytest.mark.parametrize('argv, code, words', [
    (['--controller', '--controller-flavor', 'small-preemptible'],
     common.EXIT_INPUT, 'must be a normal server'),
    (['--controller', '--controller-flavor', 'nope'], common.EXIT_CLOUD,
     "no flavor 'nope'"),
    (['--controller-flavor', 'small'], common.EXIT_INPUT,
     'needs --controller'),
])
def test_bad_controller_options(tenant, argv, code, words):
    got, out, err = tenant.run(*argv)

    assert got == code, (out, err)
    assert err.count('\n') == 1 and words in err
    assert tenant.nova.live() == []


def test_controller_needs_the_openstack_backend(tenant):
    code, _, err = tenant.cli('run', tenant.job, '--controller')

    assert code == common.EXIT_INPUT and '--controller' in err


# -- task files: the job's directory is on the tenant's machine -----------

@pytest.fixture
def io_tenant(tmp_path, monkeypatch, capsys):
    return io.prepare(Tenant(tmp_path, monkeypatch, capsys, io.JOB))


def test_inputs_staged_by_the_tenant_outputs_and_logs_read_here(io_tenant):
    tenant = io_tenant

    assert tenant.launch()[0] == 0

    # The tenant's client staged the inputs before the controller was
    # made: the controller has no job directory to read them from.
    assert len(io.store_keys(tenant, 'inputs/')) == 2
    code, out, err = tenant.cli('outputs', tenant.job_id())
    assert code == 0 and 'no task has committed a result yet' in out, err
    assert tenant.serve() == 'ended'
    assert tenant.status()['status'] == 'done'
    assert [r['event'] for r in tenant.records()].count('inputs_staged') == 1
    # The controller fetched them into its own data directory only.
    mine = io.outputs_dir(tenant, io.TASK)
    assert not mine.exists()

    code, out, err = tenant.cli('outputs', tenant.job_id())

    assert code == 0 and err == '', err
    assert (mine / io.OUT_NAME).read_text(encoding='utf-8') == \
        'STAGED INPUT\n'
    assert '3 output file(s) of 2 committed task(s)' in out
    code, log, err = tenant.cli('logs', tenant.job_id(), io.TASK,
                                '--tail', '2')
    assert code == 0, err
    assert log == 'line %05d\nto stderr\n' % (io.LINES - 1)


def test_a_job_taken_back_from_a_dead_controller_has_its_inputs(
        io_tenant):
    tenant = io_tenant
    assert tenant.launch()[0] == 0
    assert tenant.serve(kill_after=1, event='task_start') == 'killed'
    sid, _ = tenant.controller()
    tenant.nova.servers.all[sid].status = 'SHUTOFF'

    code, out, err = tenant.cli('resume', tenant.job_id(), '--quiet')

    assert code == 0, (out, err)
    assert [r['event'] for r in tenant.records()].count('inputs_staged') == 1
    for task in (io.TASK, 't2'):
        assert (io.outputs_dir(tenant, task) / io.OUT_NAME).read_text(
            encoding='utf-8') == 'STAGED INPUT\n'


def test_a_bad_input_is_refused_before_anything_is_made(io_tenant):
    tenant = io_tenant
    tenant.keystone()
    (tenant.dir / io.IN_NAME).unlink()

    code, out, err = tenant.launch()

    assert code == common.EXIT_INPUT
    assert out == '' and err.count('\n') == 1, err
    assert io.IN_NAME in err and 'no such file' in err
    assert tenant.keys.made == {} and tenant.nova.live() == []
    assert not (tenant.dir / 'store').exists()
    assert list(tenant.dir.glob('jobs/*')) == []


def test_watch_follows_the_controller(tenant):
    assert tenant.launch()[0] == 0
    assert tenant.serve() == 'ended'
    looks = []
    tenant.monkeypatch.setattr(watch, 'pause', looks.append)

    # The tenant's journal has only its own records until a command
    # copies the controller's: watch must, as status does.
    code, out, err = tenant.cli('watch', tenant.job_id(), '--count', '3')

    assert code == 0, err
    assert out.splitlines()[0] == 'job %s: done' % tenant.job_id()
    assert out.count('job %s:' % tenant.job_id()) == 1 and looks == []
    assert 'controller: server' in out and 'deleted after the job' in out


def test_list_shows_a_job_its_controller_runs_as_running(tenant):
    """``opie-bot list`` asks the controller, as ``status`` does: a job
    its controller drives is running, not paused."""
    assert tenant.launch()[0] == 0

    code, out, err = tenant.cli('list', '-f', 'json')

    assert code == 0, err
    (st,) = json.loads(out)
    assert st['status'] == 'running'


# The user data of the release before the controller became a package:
# an image with this release runs what an older client boots with.
OLDER_USER_DATA = ('import json\n'
                   'from opie.bot import controller\n\n'
                   'controller.main(json.loads(%r))\n')


@pytest.mark.parametrize('script', [
    lambda config: controller.user_data(dict(config, job_id='j')),
    lambda config: OLDER_USER_DATA % json.dumps(config)],
    ids=['this release', 'the older release'])
def test_the_user_data_of_any_release_runs_the_loop(script, monkeypatch):
    ran = []
    monkeypatch.setattr(remote, 'main',
                        lambda config, workdir=None: ran.append(config))

    exec(compile(script({'job_id': 'j', 'k': 1}), 'user-data', 'exec'), {})

    assert ran == [{'job_id': 'j', 'k': 1}]
