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
import time

from opie.bot.democloud import demo
from tests.integration import lab

SPEED = 15.0
# Wall seconds the client may take.
LIMIT_S = 300
TASKS = 8


def _job_servers(client):
    return {s.id for s in client.servers.list()
            if 'opie-job' in s.metadata}


def _preempt(alpha, beta):
    """Boot normal mediums as beta until one of the job's servers went:
    at most as many as the cloud holds, since the first ones may find room
    the job leaves free."""
    before = _job_servers(alpha)
    for index in range(2 * lab.LAB.computes):
        booted = lab.boot(beta, 'beta-%d' % index, 'medium')
        lab.settled(set(booted))
        # The victims' deletion follows the boot closely.
        time.sleep(3)
        gone = before - _job_servers(alpha)
        if gone:
            return len(gone)
    return 0


def test_preempted_job_still_meets_its_deadline(tmp_path):
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
        assert preempted >= 1
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
    assert report['counts']['servers_terminated'] >= 1
    assert report['counts']['restores'] >= 1
    # The client deleted its servers; Nova finishes in the background.
    lab.wait_for("the job's servers to go",
                 lambda: not _job_servers(alpha))
