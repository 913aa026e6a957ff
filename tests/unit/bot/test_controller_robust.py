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

"""``run --controller`` when things go wrong: a cloud that fails for
long, an error of the controller itself, a controller server that will
not go, clocks that disagree (fake Nova and agents; no test waits: the
loop's sleep and the wall clock are injected, and every check reads the
journal, the store or Nova)."""
import json
import time

from novaclient import exceptions as nova_exc
import pytest

from opie.bot.cli import common
from opie.bot import controller
from opie.bot.controller import layout
from opie.bot.state import outputs
from opie.bot.openstack import clock as clock_mod
from opie.bot.openstack import live
from opie.bot.openstack import nova
from tests.unit.bot import test_controller

POLL = 0.002        # tenant.run's --poll


@pytest.fixture
def tenant(tmp_path, monkeypatch, capsys):
    return test_controller.Tenant(tmp_path, monkeypatch, capsys)


def events(tenant):
    return [r['event'] for r in tenant.records()]


def controller_line(tenant):
    code, out, err = tenant.cli('status', tenant.job_id())
    assert code == 0, (out, err)
    (line,) = [li for li in out.splitlines() if li.startswith('controller')]
    return out.splitlines()[0], line


class Wall:
    """The wall clock of job time, moved on by the loop's sleeps."""

    def __init__(self, monkeypatch, step_s):
        self.offset = 0.0
        self.step_s = step_s
        self.waits = []
        monkeypatch.setattr(clock_mod, 'time', self)
        monkeypatch.setattr(live, '_sleep', self.sleep)

    def time(self):
        return time.time() + self.offset

    def sleep(self, seconds):
        self.waits.append(seconds)
        self.offset += self.step_s


def failing_list(tenant, fails, during=None):
    """Nova's change list answers HTTP 500 ``fails`` times (None:
    always); ``during(n)`` runs at the n-th failure."""
    listing = tenant.nova.servers.list
    count = [0]

    def list_(search_opts):
        if 'changes-since' in search_opts and (fails is None
                                               or count[0] < fails):
            count[0] += 1
            if during is not None:
                during(count[0])
            raise nova_exc.ClientException(500, 'Internal Server Error')
        return listing(search_opts)
    tenant.monkeypatch.setattr(tenant.nova.servers, 'list', list_)
    return count


# -- 1. a controller never gives up while its job can be driven ------------

def test_the_controller_retries_a_failing_nova_with_a_bounded_backoff(
        tenant):
    assert tenant.launch()[0] == 0
    wall = Wall(tenant.monkeypatch, 0.0)
    fails = live.MAX_FAILED_POLLS + 5
    seen = {}

    def during(n):
        if n == fails - 1:
            seen['json'] = tenant.status()['controller']
            seen['text'] = controller_line(tenant)
    failing_list(tenant, fails, during)

    assert tenant.serve() == 'ended'

    # Past the 20 failed polls a local client gives up after: it went on.
    assert tenant.status()['status'] == 'done'
    assert tenant.nova.live() == []
    cap = live.BACKOFF_CAP * POLL
    slow = [w for w in wall.waits if w != POLL]
    assert slow[:3] == [2 * POLL, 4 * POLL, cap]
    assert max(wall.waits) == cap and slow.count(cap) == fails - 3
    retrying = seen['json']['retrying']
    assert retrying['failures'] == fails - 2
    assert 'HTTP 500' in retrying['error']
    head, line = seen['text']
    assert head == 'job %s: running' % tenant.job_id()
    assert 'retrying for' in line and '%d failed polls' % (fails - 2) \
        in line and 'HTTP 500' in line
    assert 'retrying' not in tenant.status()['controller']


def test_a_cloud_failing_to_the_horizon_ends_the_job_clean(tenant):
    assert tenant.launch()[0] == 0
    # Half a wall second per sleep: the horizon (10 deadlines of job
    # time) comes after some 36 failed polls, past the local limit.
    Wall(tenant.monkeypatch, 0.5)
    count = failing_list(tenant, None)

    assert tenant.serve() == 'ended'

    assert count[0] > live.MAX_FAILED_POLLS
    assert tenant.nova.live() == []
    st = tenant.status()
    assert st['status'] == 'stopped'
    assert sum(st['servers'].values()) == 0
    assert tenant.report()['result']['deadline_met'] is False
    stopped = [r for r in tenant.records() if r['event'] == 'stopped']
    assert stopped[-1]['reason'] == live.HORIZON_REASON


def test_an_error_of_the_controller_is_published_and_resume_goes_on(
        tenant):
    assert tenant.launch()[0] == 0
    run = outputs.Fetcher.run
    raised = []

    def broken(self):
        if not raised:
            raised.append(1)
            raise RuntimeError('boom')
        return run(self)
    tenant.monkeypatch.setattr(outputs.Fetcher, 'run', broken)

    assert tenant.serve() == 'ended'

    assert raised and tenant.nova.live() == []
    head, line = controller_line(tenant)
    assert head == 'job %s: stopped' % tenant.job_id()
    assert 'RuntimeError: boom' in line and \
        'opie-bot resume %s' % tenant.job_id() in line
    code, out, err = tenant.cli('resume', tenant.job_id(), '--quiet')
    assert code == 0, (out, err)
    assert tenant.status()['status'] == 'done'
    assert tenant.results() == ['t1.json', 't2.json', 't3.json']


def test_a_controller_that_cannot_start_says_so_and_goes(tenant):
    assert tenant.launch()[0] == 0
    with tenant.monkeypatch.context() as m:
        def check(self, job):
            raise nova.SetupError('no image %s' % self.image)
        m.setattr(nova.NovaCloud, 'check', check)

        assert tenant.serve() == 'ended'

    assert tenant.nova.live() == []
    head, line = controller_line(tenant)
    assert head == 'job %s: stopped' % tenant.job_id()
    assert 'no image' in line and 'opie-bot resume %s' % tenant.job_id() \
        in line
    code, out, err = tenant.cli('resume', tenant.job_id(), '--quiet')
    assert code == 0, (out, err)
    assert tenant.status()['status'] == 'done'


# -- 2. fencing: the controller is gone before the tenant drives -----------

def stuck(tenant, state):
    """The controller's server is in ``state`` and Nova's deletes of it
    do not take (its host unreachable)."""
    sid, _ = tenant.controller()
    tenant.nova.servers.all[sid].status = state
    delete = tenant.nova.servers.delete
    tenant.monkeypatch.setattr(
        tenant.nova.servers, 'delete',
        lambda s: None if s == sid else delete(s))
    return sid


@pytest.mark.parametrize('state', ['ERROR', 'UNKNOWN', 'SHUTOFF',
                                   'VERIFY_RESIZE', 'RESCUE'])
def test_resume_refuses_beside_a_controller_nova_still_has(tenant, state):
    assert tenant.launch()[0] == 0
    sid = stuck(tenant, state)
    tenant.monkeypatch.setattr(controller, '_pause', lambda s: None)

    code, out, err = tenant.cli('resume', tenant.job_id(), '--quiet')

    assert code == common.EXIT_INPUT
    assert out == '' and err.count('\n') == 1, err
    assert 'controller server %s still exists (%s); try again' % (
        sid, state) in err
    assert tenant.nova.live() == [sid]
    assert 'controller_deleting' in events(tenant)
    assert 'controller_delete' not in events(tenant)
    assert 'resume' not in events(tenant)


def test_resume_waits_for_nova_to_end_the_controller(tenant):
    assert tenant.launch()[0] == 0
    sid, _ = tenant.controller()
    server = tenant.nova.servers.all[sid]
    server.status = 'ERROR'
    # Nova takes three polls to end it.
    tenant.monkeypatch.setattr(tenant.nova.servers, 'delete',
                               lambda s: setattr(server, 'left', 3))

    def pause(seconds):
        server.left -= 1
        if server.left == 0:
            server.status = 'DELETED'
    tenant.monkeypatch.setattr(controller, '_pause', pause)
    create = tenant.nova.servers.create

    def create_(*args, **kwargs):
        assert server.status == 'DELETED'
        return create(*args, **kwargs)
    tenant.monkeypatch.setattr(tenant.nova.servers, 'create', create_)

    code, out, err = tenant.cli('resume', tenant.job_id(), '--quiet')

    assert code == 0, (out, err)
    ev = events(tenant)
    assert ev.index('controller_deleting') < ev.index('controller_delete') \
        < ev.index('resume')
    assert tenant.status()['status'] == 'done'


def test_cancel_refuses_while_the_controller_will_not_go(tenant):
    assert tenant.launch()[0] == 0
    sid = stuck(tenant, 'ACTIVE')
    # It does not answer the cancel request either.
    tenant.monkeypatch.setattr(controller, '_pause', lambda s: None)

    code, out, err = tenant.cli('cancel', tenant.job_id())

    assert code == common.EXIT_INPUT
    assert err.count('\n') == 1, err
    assert 'controller server %s still exists (ACTIVE); try again' % sid \
        in err
    assert 'cancelling' not in events(tenant)
    st = tenant.status()
    assert st['status'] == 'running' and not st['controller']['taken_back']


@pytest.mark.parametrize('state', ['ERROR', 'UNKNOWN', 'SHUTOFF',
                                   'RESIZE'])
def test_status_shows_a_controller_nova_still_has_as_such(tenant, state):
    assert tenant.launch()[0] == 0
    sid, _ = tenant.controller()
    tenant.nova.servers.all[sid].status = state

    head, line = controller_line(tenant)

    assert 'paused' not in head
    assert 'server %s %s' % (sid, state) in line
    assert 'may still drive the job' in line


def test_a_controller_gone_from_nova_leaves_the_job_paused(tenant):
    assert tenant.launch()[0] == 0
    sid, _ = tenant.controller()
    tenant.nova.servers.all[sid].status = 'DELETED'

    head, line = controller_line(tenant)

    assert head.startswith('job %s: paused' % tenant.job_id())
    assert 'server %s is gone and nobody drives the job' % sid in line


# -- 4. liveness by the tenant's clock alone ---------------------------------

def test_last_heard_does_not_compare_the_two_clocks(tenant):
    assert tenant.launch()[0] == 0
    assert tenant.serve(kill_after=1, event='server_active') == 'killed'
    path = tenant.dir / 'store' / tenant.job_id() / layout.JOURNAL_KEY
    published = json.loads(path.read_text())

    def beat(at):
        path.write_text(json.dumps(dict(published, heartbeat=at)))
    # The controller's clock is an hour behind the tenant's.
    beat(time.time() - 3600)
    now = [time.time()]
    tenant.monkeypatch.setattr(controller, '_now', lambda: now[0])

    assert tenant.status()['controller']['heard_s'] == 0
    now[0] += 30
    assert tenant.status()['controller']['heard_s'] == 30
    beat(time.time() - 3590)        # its next heartbeat
    assert tenant.status()['controller']['heard_s'] == 0
    now[0] += 20
    beat(time.time() - 3600)        # Swift answers an older copy
    assert tenant.status()['controller']['heard_s'] == 20
