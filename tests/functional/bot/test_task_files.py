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

"""A task's files on Nova itself (issue 25): a real job stages an input,
its task reads it and writes a declared output, the output ends in the
data directory and ``opie-bot logs`` shows the task's whole output.

The client, ``opie-bot logs`` and the agents (started by the fake virt
driver from the servers' user data) are real processes; the test only
reads what they leave: exit statuses, files and the store.
"""
import os
import subprocess
import sys

from opie.testing.democloud import demo
from tests.functional.bot import base

LINES = 2000
# Reads its staged input, writes a declared output and one that is not,
# and prints far more than the 4096 bytes a result keeps.
SCRIPT = '''\
import os
text = open('data/in put.txt', encoding='utf-8').read()
os.makedirs('out', exist_ok=True)
with open('out/result.txt', 'w', encoding='utf-8') as f:
    f.write(text.upper())
with open('scratch.tmp', 'w') as f:
    f.write('not an output')
for i in range(%d):
    print('line %%05d of the whole log' %% i)
''' % LINES


def prepare(cloud):
    """Make ``cloud``'s job two tasks of :data:`SCRIPT`, with its files
    beside the job file."""
    os.makedirs(os.path.join(cloud.dir, 'data'))
    with open(os.path.join(cloud.dir, 'data', 'in put.txt'), 'w') as f:
        f.write('staged through the store\n')
    with open(os.path.join(cloud.dir, 'task.py'), 'w') as f:
        f.write(SCRIPT)
    job = demo.job_document(sys.executable, tasks=2)
    job['job']['outputs'] = ['out/*']
    for task in job['tasks']:
        task.update(command='%s task.py' % sys.executable,
                    inputs=['task.py', 'data/in put.txt'])
    demo.dump_job(cloud.job, job)


def read_output(data_dir, job_id, task):
    """What ``task`` wrote to its declared output, in ``data_dir``."""
    got = os.path.join(data_dir, job_id, 'outputs', task)
    with open(os.path.join(got, 'out', 'result.txt')) as f:
        return os.listdir(got), f.read()


class TaskFiles(base.BotCloud):

    def setUp(self):
        super().setUp()
        prepare(self)

    def logs(self, job_id, *extra):
        return subprocess.run(
            [sys.executable, '-m', 'opie.bot.cli', 'logs', job_id, 't01',
             '--data-dir', self.dir] + list(extra),
            env=demo.client_env(self.dir), capture_output=True,
            check=False)

    def test_input_staged_output_back_whole_log_shown(self):
        client = self.spawn(demo.client_command(self.image, self.job,
                                                self.dir, base.SPEED),
                            'client')

        code = self.wait(client)

        job_id = self.job_id()
        self.assert_ran_to_its_end(code, job_id, 'client')
        for task in ('t01', 't02'):
            self.assertEqual((['out'], 'STAGED THROUGH THE STORE\n'),
                             read_output(self.dir, job_id, task))
        logs = self.logs(job_id)
        self.assertEqual(0, logs.returncode, logs.stderr)
        lines = logs.stdout.decode().splitlines()
        self.assertEqual(['line %05d of the whole log' % i
                          for i in range(LINES)], lines)
        self.assertGreater(len(logs.stdout), 4096 * 10)
        tail = self.logs(job_id, '--tail', '1')
        self.assertEqual(b'line %05d of the whole log\n' % (LINES - 1),
                         tail.stdout)
        self.assert_bystander_untouched()
        self.assertEqual([], demo.job_servers(self))
