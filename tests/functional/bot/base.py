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

"""A test case on the in-process cloud, driving opie-bot subprocesses."""
import glob
import json
import os
import signal
import sqlite3
import subprocess
import time

from opie.testing.democloud import cloud as cloud_mod
from opie.testing.democloud import demo
from opie.testing.democloud import work
from opie.testing import harness

SPEED = 30.0
# Wall seconds a client run may take before the test gives up on it.
LIMIT_S = 240


class BotCloud(cloud_mod.InProcessCloud):

    def setUp(self):
        super().setUp()
        self.dir = self.workdir
        self.clouds_yaml(os.path.join(self.dir, 'clouds.yaml'))
        self.job = demo.write_job(os.path.join(self.dir, 'demo.yaml'),
                                  demo.sys.executable)
        # Another workload of the same project: never the client's.
        self.bystander = self.boot_normal('small', 'bystander')

    # -- driving the client -------------------------------------------------

    def spawn(self, argv, name):
        out = open(os.path.join(self.dir, name + '.out'), 'wb')
        self.addCleanup(out.close)
        proc = subprocess.Popen(argv, env=demo.client_env(self.dir),
                                stdout=out, stderr=subprocess.STDOUT)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        return proc

    def wait(self, proc, preempt=False, kill_at=None):
        """Wait for ``proc``; preempt once two tasks have checkpoints;
        SIGKILL it once the job's journal holds ``kill_at`` records.  Its
        exit status."""
        start = time.monotonic()
        while proc.poll() is None:
            self.assertLess(time.monotonic() - start, LIMIT_S,
                            'client still running')
            if preempt and demo.checkpointed(self.dir) >= 2:
                self.preempted += demo.preempt(self)
                preempt = False
            if kill_at is not None and self.journal_length() >= kill_at:
                proc.send_signal(signal.SIGKILL)
            time.sleep(0.1)
        return proc.returncode

    def burst(self):
        """Another tenant's burst: normal servers booted until one of the
        job's servers is preempted, then deleted so that the job can grow
        back.  However few servers the job has, the burst preempts: it
        boots one more than the empty cloud holds.  How many of the job's
        servers it preempted."""
        fits = len(self.HOSTS) * min(
            capacity // size for capacity, size in zip(
                harness.CAPACITY, harness.SIZES['medium']))
        preempted = demo.preempt(self, wanted=1, boots=fits + 1)
        for server in self.api.get_servers():
            if server['name'].startswith(demo.OTHER_TENANT):
                self._delete_server(server)
        return preempted

    def output(self, name):
        with open(os.path.join(self.dir, name + '.out'), 'rb') as f:
            return f.read().decode()

    def job_id(self):
        found = glob.glob(os.path.join(self.dir, 'jobs', '*.sqlite'))
        self.assertEqual(1, len(found), found)
        return os.path.basename(found[0])[:-len('.sqlite')]

    def journal_rows(self, job_id):
        db = sqlite3.connect(os.path.join(self.dir, 'jobs',
                                          job_id + '.sqlite'))
        try:
            return db.execute('SELECT * FROM records ORDER BY seq').fetchall()
        finally:
            db.close()

    def journal_length(self):
        """The records of the job's journal so far: none before the client
        created it."""
        found = glob.glob(os.path.join(self.dir, 'jobs', '*.sqlite'))
        if not found:
            return 0
        db = sqlite3.connect(found[0])
        try:
            if not db.execute("SELECT 1 FROM sqlite_master WHERE "
                              "name = 'records'").fetchall():
                return 0
            return db.execute('SELECT count(*) FROM records').fetchone()[0]
        finally:
            db.close()

    def preempted_by_opie(self, job_id):
        self.wait_for_terminations()
        created = [json.loads(r[3])['server'] for r in
                   self.journal_rows(job_id) if r[2] == 'server_create']
        return sum(self.preempt_actions(sid) for sid in created)

    def report(self, job_id):
        with open(os.path.join(self.dir, 'reports', job_id + '.json')) as f:
            return json.load(f)

    # -- checks ---------------------------------------------------------------

    def assert_ran_to_its_end(self, code, job_id, name):
        """The job finished and the client's exit code says its report's
        verdict: met (0) or missed (1) is this machine's load, at 30 job
        seconds a wall second of boots (seen missed in CI beside the lab);
        tests/unit/bot drive the clock and assert the deadline kept."""
        result = self.report(job_id)['result']
        self.assertTrue(result['finished'], self.output(name))
        self.assertEqual(0 if result['deadline_met'] else 1, code,
                         self.output(name))

    def assert_every_task_committed_once(self, job_id):
        results = os.path.join(self.dir, 'store', job_id, 'results')
        names = sorted(os.listdir(results))
        self.assertEqual(['t%02d.json' % i for i in range(1, 17)], names)
        expected = 'sum of squares 1..%d = %d' % (
            work.STEPS * work.PER_STEP,
            sum(i * i for i in range(1, work.STEPS * work.PER_STEP + 1)))
        for name in names:
            with open(os.path.join(results, name)) as f:
                result = json.load(f)
            self.assertEqual(0, result['exit_status'])
            self.assertIn(expected, result['output'])

    def assert_no_secret(self, job_id):
        texts = [self.output(n) for n in ('client', 'resume')
                 if os.path.exists(os.path.join(self.dir, n + '.out'))]
        texts.append(json.dumps(self.journal_rows(job_id)))
        for path in glob.glob(os.path.join(self.dir, 'reports', '*')):
            with open(path) as f:
                texts.append(f.read())
        for text in texts:
            self.assertNotIn(self.token, text)

    def assert_bystander_untouched(self):
        server = self.api.get_server(self.bystander['id'])
        self.assertEqual('ACTIVE', server['status'])


class ControllerCloud(BotCloud):
    """The in-process cloud, with a tenant that starts controllers."""

    def launch(self):
        client = self.spawn(demo.client_command(
            self.image, self.job, self.dir, SPEED,
            extra=['--controller']), 'client')
        self.assertEqual(0, self.wait(client), self.output('client'))
        (controller,) = self.controllers()
        return self.job_id(), controller['id']

    def controllers(self):
        return [s for s in self.api.get_servers()
                if 'opie-controller' in s.get('metadata', {})]

    def until(self, what, check):
        deadline = time.monotonic() + LIMIT_S
        while not check():
            self.assertLess(time.monotonic(), deadline, what)
            time.sleep(0.2)

    def command(self, verb, job_id, *extra):
        proc = self.spawn(demo.resume_command(self.dir, job_id, verb)
                          + list(extra), verb)
        return self.wait(proc), self.output(verb)
