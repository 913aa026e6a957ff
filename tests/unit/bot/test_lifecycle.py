"""A job's lifecycle on the real client path (issue 25): it always ends
clean, its states never go backwards, and a kill at any journal record
leaves nothing unowned (fake Nova and agents: :mod:`fake_nova`)."""
import json
import sqlite3

import pytest

from opie.bot import cli
from tests.unit.bot import fake_nova

JOB = """\
job:
  name: tiny
  deadline_s: %(deadline)s
%(policy)s
flavors:
  small:
    vcpus: 2
    ram_gb: 2
    gflops: 20
    price_h: {preemptible: 0.03, normal: 0.1}
tasks:
  - {id: t1, command: "true", runtime_s: 600}
  - {id: t2, command: "true", runtime_s: 600}
  - {id: t3, command: "true", runtime_s: 900}
"""


class Tenant:
    """One tenant's data directory, job file and cloud."""

    def __init__(self, tmp_path, monkeypatch, capsys):
        self.dir = tmp_path
        self.capsys = capsys
        self.monkeypatch = monkeypatch
        self.nova = fake_nova.install(monkeypatch, ['small'])
        self.job = self.write_job()

    def write_job(self, deadline=3600, policy=''):
        path = self.dir / 'tiny.yaml'
        path.write_text(JOB % {'deadline': deadline, 'policy': policy})
        return str(path)

    def cli(self, *argv, kill_after=None):
        """(exit status, stdout, stderr) of one command; 'killed' as the
        status if it was killed."""
        opened = fake_nova.killer(self.monkeypatch, kill_after)
        try:
            code = cli.main(list(argv) + ['--data-dir', str(self.dir)])
        except fake_nova.Killed:
            code = 'killed'
        finally:
            # The process ends: the OS closes its files, drops its lock.
            for journal in opened:
                journal.close()
        out, err = self.capsys.readouterr()
        return code, out, err

    def run(self, *extra, kill_after=None):
        return self.cli('run', self.job, '--backend', 'openstack',
                        '--image', fake_nova.IMAGE, '--network', 'none',
                        '--store', 'file://%s' % (self.dir / 'store'),
                        '--speed', str(fake_nova.SPEED), '--poll', '0.002',
                        '--quiet', *extra, kill_after=kill_after)

    def job_id(self):
        (path,) = (self.dir / 'jobs').glob('*.sqlite')
        return path.name[:-len('.sqlite')]

    def records(self):
        db = sqlite3.connect(str(self.dir / 'jobs' /
                                 (self.job_id() + '.sqlite')))
        try:
            return [json.loads(b) for (b,) in db.execute(
                'SELECT body FROM records ORDER BY seq')]
        finally:
            db.close()

    def report(self):
        return json.loads((self.dir / 'reports' /
                           (self.job_id() + '.json')).read_text())

    def results(self):
        return sorted(p.name for p in
                      (self.dir / 'store' / self.job_id()).glob(
                          'results/*.json'))


@pytest.fixture
def tenant(tmp_path, monkeypatch, capsys):
    return Tenant(tmp_path, monkeypatch, capsys)


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

    assert code == cli.EXIT_INPUT
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

    assert code == cli.EXIT_INPUT and 'cancelled' in err
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
