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

"""A job's lifecycle on the real client path (issue 25): it always ends
clean, its states never go backwards, and a kill at any journal record
leaves nothing unowned (fake Nova and agents: :mod:`fake_nova`)."""
import json
import sqlite3

import pytest

from opie.bot.cli import common
from opie.bot.state import journal as journal_mod
from tests.unit.bot import tenant as tenant_mod

JOB = """\
job:
  name: tiny
  deadline_s: %(deadline)s
%(policy)s
""" + tenant_mod.SMALL_FLAVOR + """\
tasks:
  - {id: t1, command: "true", runtime_s: 600}
  - {id: t2, command: "true", runtime_s: 600}
  - {id: t3, command: "true", runtime_s: 900}
"""


@pytest.fixture
def tenant(tmp_path, monkeypatch, capsys):
    return tenant_mod.Tenant(tmp_path, monkeypatch, capsys, JOB)


def test_a_job_runs_to_its_end(tenant):
    code, out, err = tenant.run()

    assert code == 0, (out, err)
    assert tenant.nova.live() == []
    assert tenant.results() == ['t1.json', 't2.json', 't3.json']


# -- states that cannot go backwards (points 2 and 4) ----------------------

@pytest.mark.parametrize('cancel_first', [False, True])
def test_a_finished_or_cancelled_job_cannot_be_resumed(tenant,
                                                       cancel_first):
    assert tenant.run()[0] == 0
    job_id = tenant.job_id()
    if cancel_first:
        # A done job stays done: cancel only deletes what is left.
        assert tenant.cli('cancel', job_id)[0] == 0
    before = tenant.records()

    code, out, err = tenant.cli('resume', job_id)

    assert code == common.EXIT_INPUT
    assert out == '' and err.count('\n') == 1
    assert job_id in err and 'is done' in err
    assert tenant.records() == before
    assert tenant.nova.servers.all and tenant.nova.live() == []


def test_an_unfinished_cancelled_job_cannot_be_resumed(tenant):
    tenant.nova.hang.update(('t1', 't2', 't3'))
    assert tenant.run(kill_after=6)[0] == 'killed'
    job_id = tenant.job_id()
    assert tenant.nova.live()
    assert tenant.cli('cancel', job_id)[0] == 0
    created = len(tenant.nova.servers.all)

    code, _, err = tenant.cli('resume', job_id)

    assert code == common.EXIT_INPUT and 'cancelled' in err
    assert len(tenant.nova.servers.all) == created
    assert tenant.nova.live() == []


def test_cancel_keeps_results_unless_asked(tenant):
    assert tenant.run()[0] == 0
    job_id = tenant.job_id()

    code, out, _ = tenant.cli('cancel', job_id)

    assert code == 0
    assert tenant.results() == ['t1.json', 't2.json', 't3.json']
    assert 'kept' in out and 'results' in out

    code, out, _ = tenant.cli('cancel', job_id, '--delete-results')

    assert code == 0
    assert tenant.results() == []
    assert not (tenant.dir / 'store' / job_id).exists()


# -- boot failures (point 3) -------------------------------------------------

def test_a_boot_failure_is_no_preemption(tenant):
    tenant.nova.error_flavors.add('small-preemptible')

    code, out, err = tenant.run()

    assert code == 0, (out, err)
    events = [r['event'] for r in tenant.records()]
    assert 'server_boot_failed' in events
    assert 'server_preempted' not in events
    counts = tenant.report()['counts']
    assert (counts['boot_failures'], counts['servers_terminated']) == (1, 0)
    assert tenant.nova.live() == []


def test_a_server_preempted_as_the_job_ends_is_counted_preempted(tenant):
    """The cloud takes a server between the client's last poll and its
    final deletes: the journal and the report count a preemption (billed
    until the client found it gone), not a delete of the client's."""
    taken = []
    append = journal_mod.Journal.append

    def appending(journal, record):
        append(journal, record)
        if record['event'] == 'done':
            taken.append(tenant.nova.live()[0])
            tenant.nova.servers.delete(taken[0])

    tenant.monkeypatch.setattr(journal_mod.Journal, 'append', appending)

    code, out, err = tenant.run()

    assert code == 0, (out, err)
    ends = {r['server']: r['event'] for r in tenant.records()
            if r['event'] in ('server_delete', 'server_preempted')}
    assert ends[taken[0]] == 'server_preempted'
    assert list(ends.values()).count('server_preempted') == 1
    report = tenant.report()
    assert report['counts']['servers_terminated'] == 1
    (row,) = [s for s in report['servers'] if s['server'] == taken[0]]
    assert row['end_reason'] == 'preempted'
    assert tenant.nova.live() == []
    assert_billed_as_journalled(tenant)


def test_a_boot_failure_is_deleted_whenever_the_client_dies(tenant):
    """SIGKILL after each record from the boot failure on: the resumed
    client deletes the failed server, and leaves nothing behind."""
    tenant.nova.error_flavors.add('small-preemptible')
    assert tenant.run()[0] == 0
    events = [r['event'] for r in tenant.records()]
    first = events.index('server_error') + 1
    # The error, the delete's intent, the server's end.
    for after in range(first, first + 3):
        for path in (tenant.dir / 'jobs').glob('*'):
            path.unlink()
        tenant.nova.__init__(['small'])
        tenant.nova.error_flavors.add('small-preemptible')

        assert tenant.run(kill_after=after)[0] == 'killed'
        assert 'ERROR' in tenant.nova.seen, after
        tenant.nova.error_flavors.clear()
        code, out, err = tenant.cli('resume', tenant.job_id(), '--quiet')

        assert code == 0, (after, out, err)
        assert tenant.nova.live() == [], after
        events = [r['event'] for r in tenant.records()]
        assert 'server_preempted' not in events, after
        assert tenant.report()['counts']['boot_failures'] == 1, after


# -- a job always ends clean (point 1) ---------------------------------------

NO_HANG = 'policy:\n  hang_factor: 1000\n'
# Job seconds per wall second where no deadline is to be met: the
# horizon (ten deadlines) in under two seconds.
FAST = 20000.0


def assert_billed_as_journalled(tenant):
    """Every server the job created has ended in the journal, and the
    report's cost is what those records bill."""
    records = tenant.records()
    created = {r['server']: r for r in records
               if r['event'] == 'server_create'}
    ended = {r['server']: r['t'] for r in records if r['event'] in (
        'server_delete', 'server_preempted', 'server_boot_failed')}
    assert set(ended) >= set(created)
    billed = sum(
        -(-(ended[sid] - r['t'] - 1e-9) // 1) * r['price_h'] / 3600
        for sid, r in created.items())
    assert tenant.report()['result']['cost'] == pytest.approx(billed)


def test_at_its_horizon_the_client_deletes_every_server(tenant):
    tenant.write_job(policy=NO_HANG)
    tenant.nova.hang.update(('t1', 't2', 't3'))

    code, out, err = tenant.run(speed=FAST)

    assert code == common.EXIT_MISSED, (out, err)
    assert tenant.nova.servers.all and tenant.nova.live() == []
    assert 'horizon' in out and 'deleted' in out
    assert_billed_as_journalled(tenant)
    assert 'stopped' in [r['event'] for r in tenant.records()]


def test_a_resume_past_the_horizon_creates_nothing(tenant):
    tenant.write_job(policy=NO_HANG)
    tenant.nova.hang.update(('t1', 't2', 't3'))
    assert tenant.run(kill_after=6, speed=FAST)[0] == 'killed'
    job_id = tenant.job_id()
    live = tenant.nova.live()
    assert live
    # Eleven deadlines later.
    db = sqlite3.connect(str(tenant.dir / 'jobs' / (job_id + '.sqlite')))
    with db:
        (t0,) = db.execute("SELECT value FROM meta WHERE key='t0'").fetchone()
        db.execute("UPDATE meta SET value=? WHERE key='t0'",
                   (json.dumps(json.loads(t0) - 11 * 3600 / FAST),))
    db.close()
    created = set(tenant.nova.servers.all)

    code, out, err = tenant.cli('resume', job_id, '--quiet')

    assert code == common.EXIT_MISSED, (out, err)
    assert set(tenant.nova.servers.all) == created
    assert tenant.nova.live() == []
    assert_billed_as_journalled(tenant)


def test_a_hung_task_loses_its_server_and_runs_elsewhere(tenant):
    tenant.write_job(policy='policy:\n  hang_factor: 2\n')
    tenant.nova.hang_once.add('t1')

    code, out, err = tenant.run()

    assert code == 0, (out, err)
    records = tenant.records()
    (hung,) = [r for r in records if r['event'] == 'task_hung']
    assert hung['task'] == 't1'
    assert any(r['event'] == 'server_delete' and r['server'] == hung['server']
               and 'hung' in r['reason'] for r in records)
    assert tenant.results() == ['t1.json', 't2.json', 't3.json']
    assert tenant.nova.live() == []
    assert_billed_as_journalled(tenant)


def test_a_task_that_always_hangs_fails_and_the_job_ends(tenant):
    tenant.write_job(policy='policy:\n  hang_factor: 2\n  hang_retries: 1\n')
    tenant.nova.hang.add('t1')

    code, out, err = tenant.run()

    records = tenant.records()
    assert [r['task'] for r in records if r['event'] == 'task_hung'] == [
        't1', 't1']
    assert [r['task'] for r in records if r['event'] == 'task_failed'] == [
        't1']
    assert 'done' in [r['event'] for r in records]
    # Well before the horizon.
    assert records[-1]['t'] < 2 * 3600
    assert tenant.nova.live() == []
    assert tenant.report()['counts']['failed_tasks'] == 1


def test_a_client_error_deletes_every_server_in_one_line(tenant,
                                                         monkeypatch):
    from opie.bot.openstack import runner

    def broken(self):
        raise RuntimeError('a bug')
    tenant.nova.hang.update(('t1', 't2', 't3'))
    original = runner.AgentRunner.poll_all
    calls = []

    def poll_all(self):
        calls.append(1)
        if len(calls) > 20:
            broken(self)
        original(self)
    monkeypatch.setattr(runner.AgentRunner, 'poll_all', poll_all)

    code, out, err = tenant.run()

    assert code == common.EXIT_INPUT
    (line,) = err.strip().splitlines()
    assert 'a bug' in line and '1 server deleted' in line
    assert tenant.nova.live() == []


# -- status at a glance (point 7) --------------------------------------------

def status(tenant):
    code, out, err = tenant.cli('status', tenant.job_id(), '-f', 'json')
    assert code == 0, err
    return json.loads(out)


def test_status_of_a_paused_job_is_now_and_by_state(tenant):
    tenant.write_job(policy=NO_HANG)
    tenant.nova.hang.update(('t1', 't2', 't3'))
    tenant.nova.error_flavors.add('small-preemptible')
    assert tenant.run(speed=FAST)[0] == 1
    for path in (tenant.dir / 'jobs').glob('*'):
        path.unlink()
    tenant.nova.__init__(['small'])
    tenant.nova.hang.update(('t1', 't2', 't3'))
    tenant.nova.error_flavors.add('small-preemptible')
    # Killed once two of the migrated tasks run on a normal server: by
    # the journal's records of that, not by a count of all records, whose
    # order the machine's load may change (seen failing in CI).
    assert tenant.run(kill_after=2, event='task_start',
                      speed=FAST)[0] == 'killed'
    last = tenant.records()[-1]['t']

    st = status(tenant)

    assert st['status'] == 'paused'
    assert st['deadline_s'] == 3600
    # Job time runs on while no client does.
    assert st['elapsed_s'] > last
    assert st['tasks_by_state'] == {'queued': 1, 'running': 2, 'done': 0,
                                    'failed': 0}
    assert st['servers'] == {'preemptible': 0, 'normal': 1}
    assert (st['boot_failures'], st['preemptions']) == (1, 0)
    # The normal server bills on while paused: cost so far grows.
    assert st['cost'] > 0 and st['baseline_cost'] > 0
    assert status(tenant)['cost'] >= st['cost']
    assert 'eta_s' in st

    code, out, _ = tenant.cli('status', tenant.job_id())
    assert code == 0
    for text in ('deadline 1:00:00', 'queued 1', 'running 2', 'done 0',
                 'failed 0', 'boot failures 1', 'preemptions 0',
                 'normal-only', 'ETA'):
        assert text in out, (text, out)


def test_status_after_cancel_and_when_done(tenant):
    tenant.nova.hang.update(('t1', 't2', 't3'))
    assert tenant.run(kill_after=6)[0] == 'killed'
    assert tenant.cli('cancel', tenant.job_id())[0] == 0

    st = status(tenant)

    assert st['status'] == 'cancelled'
    assert st['servers'] == {'preemptible': 0, 'normal': 0}
    cancelled_at = st['elapsed_s']
    assert status(tenant)['elapsed_s'] == cancelled_at
    assert st['eta_s'] is None


def test_status_of_a_done_job(tenant):
    assert tenant.run()[0] == 0

    st = status(tenant)

    assert st['status'] == 'done'
    assert st['tasks_by_state']['done'] == 3
    assert st['eta_s'] == st['elapsed_s'] == tenant.report()['result'][
        'makespan_s']
    assert st['cost'] == pytest.approx(tenant.report()['result']['cost'])


def test_a_cloud_run_in_json_prints_one_document(tenant):
    code, out, err = tenant.run('-f', 'json')

    assert code == 0, err
    run = json.loads(out)
    assert run['result']['finished'] and not run['simulated']
    assert tenant.job_id() in err


# -- killed at any record (points 1 to 4) -----------------------------------

def everything_accounted_for(tenant):
    """No server is left on the cloud, and every server the cloud ever
    had is one the journal created, or found by its nonce and deleted."""
    assert tenant.nova.live() == []
    records = tenant.records()
    known = {r['server'] for r in records
             if r['event'] in ('server_create', 'orphan_delete')}
    assert set(tenant.nova.servers.all) <= known


def troubled(tenant):
    """A run with a boot failure, a hung task and migrations."""
    tenant.nova.__init__(['small'])
    tenant.nova.error_flavors.add('small-preemptible')
    tenant.nova.hang_once.add('t1')
    for path in (tenant.dir / 'jobs').glob('*'):
        path.unlink()


def test_killed_after_any_record_a_resume_ends_clean(tenant):
    """SIGKILL after each journal record in turn, then resume: the job
    ends, and nothing is left that the journal does not account for."""
    tenant.write_job(policy='policy:\n  hang_factor: 2\n')
    troubled(tenant)
    assert tenant.run()[0] == 0
    total = len(tenant.records())
    for after in range(1, total):
        troubled(tenant)
        assert tenant.run(kill_after=after)[0] == 'killed'
        done = 'done' in [r['event'] for r in tenant.records()]

        code, out, err = tenant.cli('resume', tenant.job_id(), '--quiet')

        # Killed once done: the resume refuses, and deletes what is left.
        assert code == (common.EXIT_INPUT if done else 0), (after, out, err)
        everything_accounted_for(tenant)
        assert tenant.results() == ['t1.json', 't2.json', 't3.json'], after
        events = [r['event'] for r in tenant.records()]
        assert 'server_preempted' not in events, after


def test_a_cancel_killed_after_any_record_is_finished_by_another(tenant):
    """SIGKILL after each record of a cancel in turn (a copy of the
    journal and the servers as they were before it each time): a resume
    refuses the job meanwhile, a second cancel ends it clean."""
    tenant.write_job(policy=NO_HANG)
    tenant.nova.hang.update(('t2', 't3'))
    # Killed once t1 is committed, t2 and t3 running.
    assert tenant.run(kill_after=8)[0] == 'killed'
    job_id = tenant.job_id()
    live = tenant.nova.live()
    assert live and tenant.results() == ['t1.json']
    journal = tenant.dir / 'jobs' / (job_id + '.sqlite')
    saved = journal.read_bytes()
    for after in range(1, 100):
        journal.write_bytes(saved)
        for sid in live:
            tenant.nova.servers.all[sid].status = 'ACTIVE'
        if tenant.cli('cancel', job_id, kill_after=after)[0] != 'killed':
            break
        # No resume can run the job again meanwhile.
        code, _, err = tenant.cli('resume', job_id)
        assert code == common.EXIT_INPUT and 'cancelled' in err, after

        code, out, err = tenant.cli('cancel', job_id)

        assert code == 0, (after, out, err)
        everything_accounted_for(tenant)
        assert tenant.results() == ['t1.json'], after
        st = status(tenant)
        assert st['status'] == 'cancelled', after
        assert st['servers'] == {'preemptible': 0, 'normal': 0}, after
    else:
        pytest.fail('the cancel never ended')


def test_list_shows_each_jobs_state_without_planning_it(tenant):
    assert tenant.run()[0] == 0

    code, out, err = tenant.cli('list', '-f', 'json')

    assert code == 0, err
    (st,) = json.loads(out)
    assert (st['job_id'], st['status'], st['done']) == (
        tenant.job_id(), 'done', 3)
    assert st['baseline_cost'] is None


def test_a_job_stopped_by_a_client_error_resumes_to_its_end(tenant,
                                                            monkeypatch):
    from opie.bot.openstack import runner
    original = runner.AgentRunner.poll_all
    calls = []

    def poll_all(self):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError('a bug')
        original(self)
    monkeypatch.setattr(runner.AgentRunner, 'poll_all', poll_all)
    assert tenant.run()[0] == common.EXIT_INPUT
    assert status(tenant)['status'] == 'stopped'

    code, out, err = tenant.cli('resume', tenant.job_id(), '--quiet')

    assert code == 0, (out, err)
    assert status(tenant)['status'] == 'done'
    assert tenant.nova.live() == []


def test_a_resumed_job_is_running_again():
    from opie.bot.state import lifecycle
    assert lifecycle.state('stopped', ['plan', 'stopped', 'resume'],
                           True) == lifecycle.RUNNING
    assert lifecycle.state('running', ['plan', 'stopped', 'resume'],
                           False) == lifecycle.PAUSED
    assert lifecycle.state('stopped', ['plan', 'resume', 'stopped'],
                           False) == lifecycle.STOPPED


@pytest.mark.parametrize('error, code, text', [
    (KeyboardInterrupt, common.EXIT_MISSED, 'interrupted'),
    (OSError, common.EXIT_CLOUD, 'giving up for now')])
def test_a_client_that_cannot_go_on_says_what_keeps_running(
        tenant, monkeypatch, error, code, text):
    """Ctrl-C, or a cloud out of reach: nothing can be deleted safely,
    and the one line says how many servers bill on, and what to run."""
    from opie.bot.openstack import runner
    original = runner.AgentRunner.poll_all
    calls = []

    def poll_all(self):
        calls.append(1)
        if len(calls) > 3:
            raise error('out')
        original(self)
    monkeypatch.setattr(runner.AgentRunner, 'poll_all', poll_all)
    tenant.nova.hang.update(('t1', 't2', 't3'))

    got, out, err = tenant.run()

    assert got == code
    (line,) = err.strip().splitlines()
    assert text in line and 'the job\'s 1 server keeps running' in line
    assert 'resume' in line
    assert len(tenant.nova.live()) == 1


def test_a_journal_that_cannot_be_written_says_what_keeps_running(
        tenant, monkeypatch):
    from opie.bot.state import journal as journal_mod
    tenant.nova.hang.update(('t1', 't2', 't3'))
    real = journal_mod.Journal.append
    count = []

    def append(self, record):
        count.append(1)
        if len(count) > 7:
            raise journal_mod.JournalError('disk full')
        real(self, record)
    monkeypatch.setattr(journal_mod.Journal, 'append', append)

    code, _, err = tenant.run()

    assert code == common.EXIT_CLOUD
    (line,) = err.strip().splitlines()
    assert 'disk full' in line and "the job's 1 server keeps running" in line


def test_killed_while_stopping_at_the_horizon_a_resume_ends_clean(tenant):
    """SIGKILL after each record of the horizon's stop (its intent, each
    delete's before and after): a resume creates nothing and deletes
    what is left."""
    tenant.write_job(policy=NO_HANG)
    tenant.nova.hang.update(('t1', 't2', 't3'))
    assert tenant.run(speed=FAST)[0] == common.EXIT_MISSED
    events = [r['event'] for r in tenant.records()]
    first = events.index('stopped') + 1
    for after in range(first, len(events) + 1):
        tenant.nova.__init__(['small'])
        tenant.nova.hang.update(('t1', 't2', 't3'))
        for path in (tenant.dir / 'jobs').glob('*'):
            path.unlink()
        assert tenant.run(kill_after=after, speed=FAST)[0] == 'killed'
        created = set(tenant.nova.servers.all)

        code, out, err = tenant.cli('resume', tenant.job_id(), '--quiet')

        assert code == common.EXIT_MISSED, (after, out, err)
        assert set(tenant.nova.servers.all) == created, after
        everything_accounted_for(tenant)
        assert_billed_as_journalled(tenant)
        assert status(tenant)['status'] == 'stopped', after
