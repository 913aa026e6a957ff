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

"""``opie-bot run --controller`` on the lab (issue 25).

Tenant alpha's ``opie-bot run --controller`` creates an application
credential in Keystone, starts the controller server and exits at once:
nothing of the job runs on the tenant's side from then on.  The
controller (a guest of a lab compute, running its user data with the lab
venv's Python, so the lab must run this code) drives the job; once tasks
have checkpoints, tenant beta's normal boots preempt a job server; the
job still meets its deadline, the controller deletes itself, and the
tenant's ``status`` (and ``logs``) read the end from the job's store,
deleting the credential.
"""
import json
import os
import shutil
import subprocess
import sys

from opie.bot import cli
from opie.testing.democloud import demo
from opie.testing import lab
from tests.integration import test_bot

LIMIT_S = 300


def _controllers(client):
    return [s for s in client.servers.list()
            if 'opie-controller' in s.metadata]


def _credentials(job_id):
    """alpha's application credentials made for ``job_id``."""
    conn = lab.connect('lab-alpha')
    return [c for c in conn.identity.application_credentials(
        conn.current_user_id) if c.name == job_id]


def _cli(workdir, *argv):
    done = subprocess.run(
        [sys.executable, '-m', 'opie.bot.cli'] + list(argv)
        + ['--data-dir', workdir], env=demo.client_env(workdir),
        capture_output=True, text=True, timeout=LIMIT_S)
    return done.returncode, done.stdout, done.stderr


def test_a_controller_runs_a_preempted_job_while_the_tenant_is_off(
        tmp_path):
    workdir = str(tmp_path)
    shutil.copy(lab.LAB.clouds_yaml, os.path.join(workdir, 'clouds.yaml'))
    document = demo.job_document(sys.executable, tasks=test_bot.TASKS)
    flavors = document['flavors']
    # A small controller takes a core of one compute, which then holds
    # no large server: the others do.
    flavors['large']['limits']['preemptible'] = lab.LAB.computes - 1
    flavors['medium']['limits']['normal'] = 2 * lab.LAB.computes
    job = demo.dump_job(os.path.join(workdir, 'job.yaml'), document)
    alpha, beta = lab.nova('lab-alpha'), lab.nova('lab-beta')

    started = subprocess.run(
        demo.client_command(lab.IMAGE, job, workdir, test_bot.SPEED,
                            extra=['--controller', '--controller-flavor',
                                   'small'], os_cloud='lab-alpha'),
        env=demo.client_env(workdir), capture_output=True, text=True,
        timeout=LIMIT_S)

    # The tenant's client has exited: from here on, the job has no
    # process on the tenant's side.
    assert started.returncode == 0, started.stderr
    (journal,) = os.listdir(os.path.join(workdir, 'jobs'))
    job_id = journal[:-len('.sqlite')]
    (controller,) = _controllers(alpha)
    assert controller.flavor['original_name'] == 'small'
    (credential,) = _credentials(job_id)
    # Keystone lists the roles member implies (reader) beside it.
    roles = {r['name'] for r in credential.roles}
    assert 'member' in roles and roles <= {'member', 'reader'}, roles
    assert credential.unrestricted is False and credential.expires_at

    lab.wait_for('two checkpoints', lambda: demo.checkpointed(workdir) >= 2,
                 timeout=LIMIT_S)
    preempted = test_bot._preempt(alpha, beta)
    assert preempted, 'no job server was preempted'
    lab.wait_for('the controller to end the job and delete itself',
                 lambda: not _controllers(alpha), timeout=LIMIT_S)

    code, out, err = _cli(workdir, 'status', job_id, '-f', 'json')
    assert code == 0, err
    st = json.loads(out)
    assert st['status'] == 'done', st
    assert st['done'] == test_bot.TASKS
    assert st['controller']['server_state'] == 'DELETED'
    assert st['controller']['credential_deleted']
    with open(os.path.join(workdir, 'reports', job_id + '.json')) as f:
        report = json.load(f)
    assert report['result']['deadline_met'], report['result']
    assert report['counts']['servers_terminated'] >= 1
    assert report['counts']['restores'] >= 1
    if 'logs' in cli.parser().format_usage():
        # ``opie-bot logs`` (added beside this branch) reads task logs
        # from the store, which the controller shares with the tenant.
        code, out, err = _cli(workdir, 'logs', job_id, 't01')
        assert code == 0 and out.strip(), (out, err)
    assert _credentials(job_id) == []
    lab.wait_for("the job's servers to go",
                 lambda: not test_bot._job_servers(alpha))
