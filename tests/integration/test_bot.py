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

"""opie-bot runs the demo's job on the lab (issue point 5).

The client is a real ``opie-bot run`` as tenant alpha, through
keystoneauth1 and novaclient, time compressed; the servers' agents run
as the lab computes' guests. Once tasks have checkpoints, tenant beta
boots normal servers: the OPIE scheduler preempts some of the job's
servers, and the client migrates their tasks and still meets the
deadline.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from opie.testing.democloud import demo
from opie.testing import lab

# The job lasts about 90 wall seconds: once its tasks have checkpoints,
# it is still running when beta's boots come.
SPEED = 5.0
# Wall seconds the client may take.
LIMIT_S = 300
TASKS = 8
# Wall seconds of notice: at SPEED, longer than a checkpoint's dump and
# the client's and agents' polls.
NOTICE = 20


def _job_servers(client):
    return {s.id for s in client.servers.list()
            if 'opie-job' in s.metadata}


def _preempted(server_ids):
    """The servers of ``server_ids`` OPIE preempted: those with an
    ``opie-preempt`` instance action (a server the job deleted itself has
    none)."""
    history = lab.nova('lab-admin', '2.21').instance_action
    return {i for i in server_ids
            if any(a.action == 'opie-preempt' for a in history.list(i))}


def _preempt(alpha, beta):
    """Boot normal mediums as beta, one at a time, until one of the job's
    servers is preempted: at most as many as the cloud holds, since the
    first ones may find room the job leaves free, and no more, so that the
    job has room left to migrate to. The job's servers preempted."""
    seen = set()
    for index in range(2 * lab.LAB.computes):
        seen |= _job_servers(alpha)
        lab.settled(set(lab.boot(beta, 'beta-%d' % index, 'medium')))
        # The scheduler records the action as it answers, before the
        # server is built: a boot that preempted shows it now.
        preempted = _preempted(seen)
        if preempted:
            return preempted
    return set()


def _run_preempted_job(tmp_path):
    """Run the demo's job as alpha, preempt some of its servers once
    tasks have checkpoints; (its report, the client's output, the job's
    servers preempted)."""
    workdir = str(tmp_path)
    shutil.copy(lab.LAB.clouds_yaml, os.path.join(workdir, 'clouds.yaml'))
    # The demo's job, sized to the lab: a compute holds one large server.
    document = demo.job_document(sys.executable, tasks=TASKS)
    flavors = document['flavors']
    flavors['large']['limits']['preemptible'] = lab.LAB.computes
    flavors['medium']['limits']['normal'] = 2 * lab.LAB.computes
    job = demo.dump_job(os.path.join(workdir, 'job.yaml'), document)
    with open(os.path.join(workdir, 'client.out'), 'wb') as out:
        client = subprocess.Popen(
            demo.client_command(lab.IMAGE, job, workdir, SPEED,
                                os_cloud='lab-alpha'),
            env=demo.client_env(workdir), stdout=out,
            stderr=subprocess.STDOUT)
    try:
        alpha, beta = lab.nova('lab-alpha'), lab.nova('lab-beta')
        lab.wait_for('two checkpoints', lambda: client.poll() is not None
                     or demo.checkpointed(workdir) >= 2, timeout=LIMIT_S)
        preempted = _preempt(alpha, beta)
        assert preempted, "no job server was preempted"
        code = client.wait(timeout=LIMIT_S)
    finally:
        if client.poll() is None:
            client.kill()
    with open(os.path.join(workdir, 'client.out')) as f:
        output = f.read()
    assert code == 0, output[-3000:]
    report_path, = glob.glob(os.path.join(workdir, 'reports', '*.json'))
    with open(report_path) as f:
        report = json.load(f)
    assert report['result']['deadline_met'], output[-3000:]
    # The client deleted its servers; Nova finishes in the background.
    lab.wait_for("the job's servers to go",
                 lambda: not _job_servers(alpha))
    return report, output, preempted


def test_preempted_job_still_meets_its_deadline(tmp_path):
    report, output, preempted = _run_preempted_job(tmp_path)

    # Preempted is decided from Nova's actions, not from servers gone (the
    # job deletes its own servers too).
    assert report['counts']['servers_terminated'] >= 1, (preempted, output[
        -3000:])
    assert report['counts']['restores'] >= 1


@pytest.fixture
def noticed_large():
    """The job's preemptible flavor gives NOTICE seconds of notice; none
    again afterwards."""
    flavor = 'large-preemptible'
    _set_notice(flavor, NOTICE)
    yield
    _set_notice(flavor, 0)


def _set_notice(flavor, seconds):
    code, output = lab.opie_manage('flavor', 'set-terms', flavor,
                                   '--notice', str(seconds), '--os-cloud',
                                   'lab-admin')
    assert code == 0, output


def test_a_notice_makes_the_job_checkpoint_and_lose_no_work(
        tmp_path, noticed_large):
    report, output, preempted = _run_preempted_job(tmp_path)

    counts = report['counts']
    # Each preempted server was told, and its tasks stopped with a
    # checkpoint taken on the notice: nothing done since was lost.
    assert counts['notices'] >= len(preempted), output[-3000:]
    assert counts['work_lost_s'] == 0, output[-3000:]
    assert counts['restores'] >= 1
