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

"""A job's lifecycle on Nova itself (issue 25): a boot failure is no
preemption, and its server is deleted whenever the client dies."""
import glob
import json
import os
import signal
import sqlite3
import time

import yaml

from opie.testing.democloud import demo
from opie.core import contract
from opie.core import flavor_spec
from tests.functional.bot import base

# Far more vCPUs than a compute of the in-process cloud has: Nova finds
# no host, even by preempting, and the server goes to ERROR.
HUGE_VCPUS = 64


class Lifecycle(base.BotCloud):

    def setUp(self):
        super().setUp()
        for name, specs in (
                ('huge', None),
                ('huge' + contract.NAME_SUFFIX,
                 flavor_spec.preemptible_specs(flavor_spec.Flavor(
                     'huge', HUGE_VCPUS, 1024, 1)))):
            self._create_flavor(name=name, vcpu=HUGE_VCPUS, memory_mb=1024,
                                disk=1, ephemeral=0, extra_spec=specs)
        with open(self.job) as f:
            job = yaml.safe_load(f)
        # The cheapest Gflops of the job: the plan puts tasks on it.
        job['flavors']['huge'] = {
            'vcpus': 4, 'ram_gb': 8, 'gflops': 160,
            'price_h': {'preemptible': 0.01, 'normal': 1.0},
            'limits': {'preemptible': 1, 'normal': 0}}
        with open(self.job, 'w') as f:
            yaml.safe_dump(job, f)

    def assert_no_server_left(self):
        """Nova may still be finishing the deletes the client made: waited
        for as the harness waits for one server's deletion."""
        self._poll(lambda: not demo.job_servers(self), 40)
        self.assertEqual([], demo.job_servers(self))

    def events(self, job_id):
        try:
            rows = self.journal_rows(job_id)
        except sqlite3.OperationalError:
            return []   # a journal the client has only just created
        return [(r[2], json.loads(r[3]).get('server')) for r in rows]

    def test_a_boot_failure_killed_in_its_delete_is_deleted_on_resume(self):
        client = self.spawn(demo.client_command(self.image, self.job, self.dir,
                                                base.SPEED), 'client')
        job_id = None
        while job_id is None or 'server_error' not in [
                e for e, _ in self.events(job_id)]:
            self.assertIsNone(client.poll(), self.output('client'))
            if job_id is None and glob.glob(
                    os.path.join(self.dir, 'jobs', '*.sqlite')):
                job_id = self.job_id()
            time.sleep(0.02)
        client.send_signal(signal.SIGKILL)
        client.wait()
        failed = [s for e, s in self.events(job_id) if e == 'server_error']
        self.assertEqual(1, len(failed), self.events(job_id))
        failed = failed[0]

        resumed = self.spawn(demo.resume_command(self.dir, job_id), 'resume')

        self.assertIn(self.wait(resumed), (0, 1), self.output('resume'))
        events = self.events(job_id)
        self.assertEqual(1, events.count(('server_boot_failed', failed)),
                         events)
        self.assertNotIn(('server_preempted', failed), events)
        self.assert_no_server_left()
        self.assert_every_task_committed_once(job_id)
        self.assert_bystander_untouched()
        status = self.spawn(demo.resume_command(self.dir, job_id, 'status')
                            + ['-f', 'json'], 'status')
        self.assertEqual(0, self.wait(status), self.output('status'))
        st = json.loads(self.output('status'))
        self.assertEqual(1, st['boot_failures'])
        self.assertEqual({'preemptible': 0, 'normal': 0}, st['servers'])
        self.assertEqual(16, st['tasks_by_state']['done'])
