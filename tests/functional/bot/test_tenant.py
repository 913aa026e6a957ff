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

"""opie-bot against the project's other members and against itself.

Any member of the project can tag, name and shelve servers: the client
owns only what its journal shows it created.  Two clients on one job: the
second stops at once.  Tasks that end while no client runs count as done.
"""
import json
import os
import signal
import subprocess
import sys
import time

import yaml

from opie.bot.state import journal as journal_mod
from opie.testing.democloud import demo
from opie.bot.openstack import nova
from tests.functional.bot import base


class Tenant(base.BotCloud):

    def kill_client_once_checkpointed(self):
        client = self.spawn(demo.client_command(self.image, self.job, self.dir,
                                                base.SPEED), 'client')
        while demo.checkpointed(self.dir) < 2:
            self.assertIsNone(client.poll(), self.output('client'))
            time.sleep(0.1)
        client.send_signal(signal.SIGKILL)
        client.wait()
        return self.job_id()

    def impostors(self, job_id):
        """What another member of the project makes to look like the
        job's: a server with the job's tag, metadata and the nonce of one
        of its servers, and a shelved server renamed like one of the
        job's, whose snapshot has the name of that server's."""
        ours = demo.job_servers(self)[0]
        copy = self.api.post_server({'server': {
            'name': ours['name'], 'imageRef': self.image,
            'flavorRef': self.flavors['small'], 'networks': 'none',
            'tags': [nova.tag_for(job_id)],
            'metadata': dict(ours['metadata'])}})
        twin = self.boot_normal('small', ours['name'])
        self.api.post_server_action(twin['id'], {'shelve': None})
        self._wait_for_state_change(twin, 'SHELVED_OFFLOADED')
        self._wait_for_state_change(copy, 'ACTIVE')
        images = [i for i in self.images()
                  if i['name'] == ours['name'] + '-shelved']
        self.assertEqual(1, len(images))
        return copy['id'], twin['id'], images[0]['id']

    def images(self):
        """Images through Nova's image API, as the client reads them."""
        latest, self.api.microversion = self.api.microversion, \
            nova.IMAGE_PROXY_VERSION
        try:
            return self.api.get_images()
        finally:
            self.api.microversion = latest

    def assert_untouched(self, copy, twin, image):
        self.assertEqual('ACTIVE', self.api.get_server(copy)['status'])
        self.assertEqual('SHELVED_OFFLOADED',
                         self.api.get_server(twin)['status'])
        self.assertIn(image, [i['id'] for i in self.images()])
        # The twin can still come back from its snapshot.
        self.api.post_server_action(twin, {'unshelve': None})
        self._wait_for_state_change(self.api.get_server(twin), 'ACTIVE')

    def run_cli(self, argv, **env):
        """An opie-bot command from another directory; (code, stdout)."""
        done = subprocess.run(
            [sys.executable, '-m', 'opie.bot.cli'] + argv,
            env=dict(demo.client_env(self.dir), **env), cwd='/',
            capture_output=True, text=True, timeout=base.LIMIT_S)
        return done.returncode, done.stdout, done.stderr

    # -- tests ------------------------------------------------------------

    def test_resume_by_two_clients_with_impostors_and_tasks_done_away(self):
        job_id = self.kill_client_once_checkpointed()
        copy, twin, image = self.impostors(job_id)
        # Agents run on while no client does: wait until some task ends.
        committed = os.path.join(self.dir, 'store', job_id, 'results')
        while not os.path.isdir(committed) or not os.listdir(committed):
            time.sleep(0.1)

        first = self.spawn(demo.resume_command(self.dir, job_id), 'resume')
        journal = journal_mod.Journal(journal_mod.path_for(
            os.path.join(self.dir, 'jobs'), job_id))
        # Driven (the kernel names the holder from its flock on): the
        # second client's message names it.
        while journal.writer() != first.pid:
            self.assertIsNone(first.poll(), self.output('resume'))
            time.sleep(0.1)
        # Held still so it cannot finish while the second one starts.
        first.send_signal(signal.SIGSTOP)
        try:
            second = self.spawn(demo.resume_command(self.dir, job_id),
                                'second')
            self.assertEqual(3, self.wait(second))
        finally:
            first.send_signal(signal.SIGCONT)
        lines = self.output('second').strip().splitlines()
        self.assertEqual(1, len(lines), lines)
        self.assertIn('another opie-bot (pid %d)' % first.pid, lines[0])

        self.assert_ran_to_its_end(self.wait(first), job_id, 'resume')
        events = [r[2] for r in self.journal_rows(job_id)]
        self.assertEqual(16, events.count('task_finish'))
        # The impostors' normal boots may preempt the job's servers (and
        # a boot of the job may fail for lack of room): only what the
        # scheduler did counts as preempted, never an impostor's end.
        rep = self.report(job_id)
        self.assertEqual(self.preempted_by_opie(job_id),
                         rep['counts']['servers_terminated'])
        self.assert_every_task_committed_once(job_id)
        self.assert_untouched(copy, twin, image)
        self.assertEqual([copy], [s['id'] for s in demo.job_servers(self)])
        self.assertEqual(16, len({s['task'] for s in rep['segments']
                                  if s['outcome'] == 'done'}))

        # status and list find the job from any directory, by
        # $OPIE_BOT_DATA alone.
        code, out, err = self.run_cli(['status', job_id, '-f', 'json'],
                                      OPIE_BOT_DATA=self.dir)
        self.assertEqual(0, code, err)
        st = json.loads(out)
        self.assertEqual(('done', 16, 16),
                         (st['status'], st['done'], st['tasks']))
        code, out, err = self.run_cli(['list', '--data-dir', self.dir])
        self.assertEqual(0, code, err)
        self.assertIn('%s done' % job_id, ' '.join(out.split()))

    def test_cancel_deletes_only_what_the_journal_shows(self):
        job_id = self.kill_client_once_checkpointed()
        copy, twin, image = self.impostors(job_id)

        cancel = self.spawn(demo.resume_command(self.dir, job_id, 'cancel'),
                            'cancel')

        self.assertEqual(0, self.wait(cancel), self.output('cancel'))
        self.assertEqual([copy], [s['id'] for s in demo.job_servers(self)])
        self.assert_untouched(copy, twin, image)
        self.assert_bystander_untouched()


class ShortSecret(base.BotCloud):
    """The cloud's token is "1", kept in secure.yaml: it occurs in every
    float of the journal, which must neither hold it as a credential nor
    make the job unrunnable."""

    def make_token(self):
        return '1'

    def setUp(self):
        super().setUp()
        clouds = os.path.join(self.dir, 'clouds.yaml')
        with open(clouds) as f:
            document = yaml.safe_load(f)
        token = document['clouds']['demo']['auth'].pop('token')
        with open(clouds, 'w') as f:
            yaml.safe_dump(document, f)
        secure = os.path.join(self.dir, 'secure.yaml')
        with open(secure, 'w') as f:
            yaml.safe_dump({'clouds': {'demo': {'auth': {'token': token}}}},
                           f)
        os.environ['OS_CLIENT_SECURE_FILE'] = secure
        self.addCleanup(os.environ.pop, 'OS_CLIENT_SECURE_FILE')

    def test_a_short_token_from_secure_yaml_runs_the_job(self):
        client = self.spawn(demo.client_command(self.image, self.job, self.dir,
                                                base.SPEED), 'client')

        code = self.wait(client)
        job_id = self.job_id()
        self.assert_ran_to_its_end(code, job_id, 'client')
        self.assertEqual(16, sum(1 for r in self.journal_rows(job_id)
                                 if r[2] == 'task_finish'))
        self.assert_every_task_committed_once(job_id)
        self.assertEqual([], demo.job_servers(self))
