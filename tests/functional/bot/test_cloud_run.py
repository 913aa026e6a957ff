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

"""opie-bot on an in-process Nova + Placement with the OPIE scheduler.

The client and the agents are real subprocesses; the cloud serves Nova's
API on 127.0.0.1.  A normal boot of another tenant preempts some of the
job's preemptible servers; the client migrates their tasks from their
checkpoints and still meets the deadline (issue 5's acceptance).
"""
import os
import random
import signal
import time

from opie.bot import agent
from opie.testing.democloud import demo
from opie.bot.openstack import live
from tests.functional.bot import base


class CloudRun(base.BotCloud):

    # -- tests-------------------------------------------------------------

    def test_preempted_job_migrates_to_its_end(self):
        self.preempted = 0
        client = self.spawn(demo.client_command(self.image, self.job, self.dir,
                                                base.SPEED), 'client')

        code = self.wait(client, preempt=True)

        job_id = self.job_id()
        self.assert_ran_to_its_end(code, job_id, 'client')
        rep = self.report(job_id)
        # The other tenant's boots preempt; so may the job's own normal
        # servers, booted for migrations: Nova's instance actions tell.
        self.assertGreaterEqual(self.preempted, 1)
        self.assertEqual(self.preempted_by_opie(job_id),
                         rep['counts']['servers_terminated'])
        self.assertGreaterEqual(rep['counts']['restores'], 1)
        self.assertEqual(16, sum(1 for r in self.journal_rows(job_id)
                                 if r[2] == 'task_finish'))
        self.assert_every_task_committed_once(job_id)
        self.assert_no_secret(job_id)
        self.assert_bystander_untouched()
        # Done: every server of the job is deleted.
        self.assertEqual([], demo.job_servers(self))

    def test_client_killed_five_times_resumes_to_the_end(self):
        rng = random.Random(5)
        client = self.spawn(demo.client_command(self.image, self.job, self.dir,
                                                base.SPEED), 'client')
        # Killed at points the journal marks, whatever the machine's load:
        # booting (once it asked for a server), then each resume as it
        # starts, once it adopted the job, or a few records later (running
        # or migrating tasks); all but the last.  A whole run writes over
        # 90 records: every kill comes before the job's end.
        self.assertEqual(-signal.SIGKILL, self.wait(
            client, kill_at=rng.randint(3, 9)))
        job_id = self.job_id()
        # With no client alive, another tenant's burst preempts a server of
        # the job once Nova has built it: the next client finds it gone.

        def building():
            return [s['id'] for s in demo.job_servers(self)
                    if s['status'] == 'BUILD']
        self._poll(lambda: not building(), 10)
        self.assertEqual([], building())
        self.assertNotEqual([], demo.job_servers(self))
        preempted = self.burst()
        for new_records in [0] + [rng.randint(1, 12) for _ in range(3)]:
            resumed = self.spawn(demo.resume_command(self.dir, job_id),
                                 'resume')
            self.assertEqual(-signal.SIGKILL, self.wait(
                resumed, kill_at=self.journal_length() + new_records),
                self.output('resume'))
        resumed = self.spawn(demo.resume_command(self.dir, job_id), 'resume')
        # Job time runs on while no client does: how late five deaths
        # make the job depends on the machine's load, not on the client.
        self.assertIn(self.wait(resumed), (0, 1), self.output('resume'))

        rep = self.report(job_id)
        self.assertGreaterEqual(preempted, 1)
        # Resumes that got as far as adopting the job journal it.
        self.assertGreaterEqual(rep['counts']['client_resumes'], 1)
        self.assertTrue(rep['result']['finished'])
        # No task ran twice to completion.
        self.assertEqual(0, rep['counts']['duplicate_runs'])
        self.assert_every_task_committed_once(job_id)
        self.assert_no_secret(job_id)
        self.assert_bystander_untouched()
        self.assertEqual([], demo.job_servers(self))

    def test_cancel_deletes_only_the_jobs_servers_and_objects(self):
        client = self.spawn(demo.client_command(self.image, self.job, self.dir,
                                                base.SPEED), 'client')
        while demo.checkpointed(self.dir) < 1:
            self.assertIsNone(client.poll(), self.output('client'))
            time.sleep(0.1)
        client.send_signal(signal.SIGKILL)
        client.wait()
        job_id = self.job_id()
        self.assertNotEqual([], demo.job_servers(self))

        cancel = self.spawn(demo.resume_command(self.dir, job_id, 'cancel'),
                            'cancel')

        self.assertEqual(0, self.wait(cancel), self.output('cancel'))
        self.assertEqual([], demo.job_servers(self))
        self.assert_bystander_untouched()
        # What the tasks left (results, outputs, logs) is kept, nothing
        # else.
        store = os.path.join(self.dir, 'store', job_id)
        self.assertEqual([], [
            key for key in agent.DirStore(store).list()
            if not key.startswith(live.KEPT)])
        self.assertNotEqual([], agent.DirStore(store).list('logs/'))
        status = self.spawn(demo.resume_command(self.dir, job_id, 'status'),
                            'status')
        self.assertEqual(0, self.wait(status))
        self.assertIn('cancelled', self.output('status'))
