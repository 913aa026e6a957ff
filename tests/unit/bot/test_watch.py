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

"""``opie-bot watch``: the status again and again, until the job ends.

Time never decides anything here: the pause between two looks is the
test's own function, which may change the job or interrupt the watch.
"""
import pytest

from opie.bot import cli
from opie.bot.report import watch
from tests.unit.bot import tenant as tenant_mod
from tests.unit.bot import test_lifecycle


@pytest.fixture
def tenant(tmp_path, monkeypatch, capsys):
    return tenant_mod.Tenant(tmp_path, monkeypatch, capsys,
                             test_lifecycle.JOB)


@pytest.fixture
def pauses(monkeypatch):
    """The pauses the watch takes, each calling what the test put in
    ``then`` first."""
    taken = []
    then = []

    def pause(seconds):
        taken.append(seconds)
        if then:
            then.pop(0)()
    monkeypatch.setattr(watch, 'pause', pause)
    return taken, then


def test_follow_looks_until_the_job_ends():
    states = iter(['running', 'paused', 'running', 'done', 'never read'])
    shown, slept = [], []

    last = watch.follow(lambda: {'status': next(states)}, shown.append,
                        interval=7, sleep=slept.append)

    assert [s['status'] for s in shown] == ['running', 'paused', 'running',
                                            'done']
    assert last == {'status': 'done'} and slept == [7, 7, 7]


def test_follow_stops_after_count_looks():
    shown = []

    watch.follow(lambda: {'status': 'running'}, shown.append, interval=1,
                 count=2, sleep=lambda s: None)

    assert len(shown) == 2


def hung_job(tenant):
    """A job whose client died while its tasks ran: paused."""
    tenant.nova.hang.update(('t1', 't2', 't3'))
    assert tenant.run(kill_after=6)[0] == 'killed'
    return tenant.job_id()


def test_watch_a_paused_job_count_times(tenant, pauses):
    job_id = hung_job(tenant)

    code, out, err = tenant.cli('watch', job_id, '--interval', '30',
                                '--count', '3')

    assert code == 0, err
    assert out.count('job %s: paused' % job_id) == 3
    assert out.count('cost so far') == 3
    assert pauses[0] == [30.0, 30.0]


def test_watch_ends_with_the_job(tenant, pauses):
    job_id = hung_job(tenant)
    taken, then = pauses

    def cancel():
        # Not through tenant.cli, which would read the watch's output.
        assert cli.main(['cancel', job_id, '--data-dir', str(tenant.dir)]) \
            == 0
    then.append(cancel)

    code, out, err = tenant.cli('watch', job_id)

    assert code == 1, err
    assert out.count('paused') == 1
    assert 'job %s: cancelled\n' % job_id in out
    assert taken == [watch.DEFAULT_INTERVAL]


def test_ctrl_c_ends_the_watch_quietly(tenant, pauses):
    job_id = hung_job(tenant)

    def interrupt():
        raise KeyboardInterrupt
    pauses[1].append(interrupt)

    code, out, err = tenant.cli('watch', job_id)

    assert code == 0 and err == ''
    assert out.count('paused') == 1


def test_watch_a_done_job_shows_it_once(tenant, pauses):
    assert tenant.run()[0] == 0

    code, out, err = tenant.cli('watch', tenant.job_id())

    assert code == 0 and out.count('job %s: done' % tenant.job_id()) == 1
    assert pauses[0] == []


def test_watch_an_unknown_job(tenant, pauses):
    code, out, err = tenant.cli('watch', 'nope-000001')

    assert code == 2 and out == '' and err.count('\n') == 1
    assert 'no journal' in err


def test_an_interval_below_a_second_is_refused(tenant):
    with pytest.raises(SystemExit) as exc:
        tenant.cli('watch', 'x-000001', '--interval', '0.001')
    assert exc.value.code == 2
