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

"""One tenant of the fake cloud (:mod:`fake_nova`): a data directory, a
job file and the real ``opie-bot`` commands, killed at will."""
import json
import sqlite3

from opie.bot import cli
from tests.unit.bot import fake_nova

# The one flavor of the fake cloud (fake_nova.install), in a job file.
SMALL_FLAVOR = """\
flavors:
  small:
    vcpus: 2
    ram_gb: 2
    gflops: 20
    price_h: {preemptible: 0.03, normal: 0.1}
"""


class Tenant:
    """One tenant's data directory, job file and cloud."""

    def __init__(self, tmp_path, monkeypatch, capsys, template):
        self.dir = tmp_path
        self.template = template
        self.capsys = capsys
        self.monkeypatch = monkeypatch
        self.nova = fake_nova.install(monkeypatch, ['small'])
        self.job = self.write_job()

    def write_job(self, deadline=3600, policy=''):
        path = self.dir / 'tiny.yaml'
        path.write_text(self.template % {'deadline': deadline,
                                         'policy': policy})
        return str(path)

    def cli(self, *argv, kill_after=None, event=None):
        """(exit status, stdout, stderr) of one command; 'killed' as the
        status if it was killed (:func:`fake_nova.killer`)."""
        opened = fake_nova.killer(self.monkeypatch, kill_after, event)
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

    def run(self, *extra, kill_after=None, event=None,
            speed=fake_nova.SPEED):
        return self.cli('run', self.job, '--backend', 'openstack',
                        '--image', fake_nova.IMAGE, '--network', 'none',
                        '--store', 'file://%s' % (self.dir / 'store'),
                        '--speed', str(speed), '--poll', '0.002',
                        '--quiet', *extra, kill_after=kill_after,
                        event=event)

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
