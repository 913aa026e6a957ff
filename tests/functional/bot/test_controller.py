"""``opie-bot run --controller`` on Nova itself (issue 25): the tenant's
client exits at once, the controller server runs the job to its end as a
guest of the in-process cloud (its user data, like the agents'), with
nothing running on the tenant's side, and deletes itself; a controller
that dies is said by ``status`` and ``resume`` takes the job back."""
import json
import time

from opie.bot.democloud import demo
from tests.functional.bot import base


class Controller(base.BotCloud):

    def launch(self):
        client = self.spawn(demo.client_command(
            self.image, self.job, self.dir, base.SPEED,
            extra=['--controller']), 'client')
        self.assertEqual(0, self.wait(client), self.output('client'))
        (controller,) = self.controllers()
        return self.job_id(), controller['id']

    def controllers(self):
        return [s for s in self.api.get_servers()
                if 'opie-controller' in s.get('metadata', {})]

    def until(self, what, check):
        deadline = time.monotonic() + base.LIMIT_S
        while not check():
            self.assertLess(time.monotonic(), deadline, what)
            time.sleep(0.2)

    def command(self, verb, job_id, *extra):
        proc = self.spawn(demo.resume_command(self.dir, job_id, verb)
                          + list(extra), verb)
        return self.wait(proc), self.output(verb)

    def test_the_controller_runs_the_job_and_deletes_itself(self):
        job_id, _ = self.launch()

        # The tenant's side runs nothing from here on: only Nova says
        # when the job is over, as the controller deletes its server.
        self.until('the controller to end the job and go',
                   lambda: not self.controllers())

        code, out = self.command('status', job_id, '-f', 'json')
        self.assertEqual(0, code, out)
        st = json.loads(out)
        self.assertEqual(('done', 16), (st['status'], st['done']))
        self.assertEqual('DELETED', st['controller']['server_state'])
        self.until("the job's servers to go",
                   lambda: not demo.job_servers(self))
        self.assert_every_task_committed_once(job_id)
        self.assertTrue(self.report(job_id)['result']['deadline_met'])
        self.assert_no_secret(job_id)
        self.assert_bystander_untouched()

    def test_a_dead_controller_is_said_and_resume_takes_the_job_back(self):
        job_id, controller = self.launch()
        self.until('two checkpoints', lambda: demo.checkpointed(self.dir)
                   >= 2)
        # The controller's server stops: its process goes with it.
        self.api.post_server_action(controller, {'os-stop': None})
        self._wait_for_state_change(self.api.get_server(controller),
                                    'SHUTOFF')

        code, out = self.command('status', job_id)
        self.assertEqual(0, code, out)
        self.assertIn('is shutoff and nobody drives the job', out)

        code, out = self.command('resume', job_id)

        self.assertEqual(0, code, out)
        self.assertEqual([], self.controllers())
        self.until("the job's servers to go",
                   lambda: not demo.job_servers(self))
        self.assert_every_task_committed_once(job_id)
        code, out = self.command('status', job_id, '-f', 'json')
        self.assertEqual('done', json.loads(out)['status'])
        self.assert_bystander_untouched()
