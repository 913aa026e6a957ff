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

"""What the cloud refuses or lacks: one line, exit 3, journal intact."""
import os
import shutil
import signal
import time

import yaml

from opie.testing.democloud import demo
from tests.functional.bot import base

EXIT_CLOUD = 3


class CloudErrors(base.BotCloud):

    def run_client(self, argv, name):
        code = self.wait(self.spawn(argv, name))
        lines = self.output(name).strip().splitlines()
        return code, lines

    def assert_one_line(self, lines, text):
        self.assertEqual(1, len(lines), lines)
        self.assertIn(text, lines[0])
        self.assertNotIn(self.token, lines[0])

    def test_missing_flavor_names_it(self):
        with open(self.job) as f:
            job = yaml.safe_load(f)
        job['flavors']['huge'] = dict(job['flavors']['large'])
        with open(self.job, 'w') as f:
            yaml.safe_dump(job, f)

        code, lines = self.run_client(demo.client_command(
            self.image, self.job, self.dir, base.SPEED), 'client')

        self.assertEqual(EXIT_CLOUD, code)
        self.assert_one_line(lines, "no flavor 'huge'")
        self.assertEqual([], os.listdir(os.path.join(self.dir, 'jobs')))

    def test_missing_image_names_it(self):
        argv = demo.client_command(self.image, self.job, self.dir,
                                   base.SPEED)
        argv[argv.index('--image') + 1] = 'no-such-image'

        code, lines = self.run_client(argv, 'client')

        self.assertEqual(EXIT_CLOUD, code)
        self.assert_one_line(lines, "no image 'no-such-image'")
        self.assertEqual([], demo.job_servers(self))

    def test_bad_credentials_on_resume_leave_the_journal_intact(self):
        client = self.spawn(demo.client_command(
            self.image, self.job, self.dir, base.SPEED), 'client')
        while len(demo.job_servers(self)) < 2:
            self.assertIsNone(client.poll(), self.output('client'))
            time.sleep(0.1)
        client.send_signal(signal.SIGKILL)
        client.wait()
        job_id = self.job_id()
        before = self.journal_rows(job_id)
        shutil.copy(os.path.join(self.dir, 'clouds.yaml'),
                    os.path.join(self.dir, 'good.yaml'))
        self.clouds_yaml(os.path.join(self.dir, 'clouds.yaml'),
                         token='not-the-token')

        code, lines = self.run_client(
            demo.resume_command(self.dir, job_id), 'resume')

        self.assertEqual(EXIT_CLOUD, code)
        self.assert_one_line(lines, 'refused the credentials')
        self.assertEqual(before, self.journal_rows(job_id))
        os.replace(os.path.join(self.dir, 'good.yaml'),
                   os.path.join(self.dir, 'clouds.yaml'))
        code, lines = self.run_client(
            demo.resume_command(self.dir, job_id, 'cancel'), 'cancel')
        self.assertEqual(0, code, lines)

    def test_status_of_an_unknown_job_is_bad_input(self):
        code, lines = self.run_client(
            demo.resume_command(self.dir, 'nope-000000', 'status'), 'status')

        self.assertEqual(2, code)
        self.assert_one_line(lines, 'no journal')
