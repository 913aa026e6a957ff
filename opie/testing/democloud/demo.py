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

"""``opie-bot demo``: a job preempted on an in-process cloud.

1. Start :class:`cloud.InProcessCloud` (two 8-vCPU computes, the OPIE
   scheduler) and write a clouds.yaml for it.
2. Run ``opie-bot run --backend openstack`` on the example job
   (:func:`job_document`) as a real subprocess, time compressed.
3. Once the job's servers run tasks and have checkpoints, boot normal
   servers as another tenant would: the OPIE scheduler preempts some of
   the job's preemptible servers to make room.
4. The client sees it, migrates their tasks from their checkpoints and
   finishes before the deadline; its report is printed.
"""
import glob
import logging
import os
import subprocess
import sys
import tempfile
import time

import yaml

# Wall seconds the demo waits for the client at most.
TIMEOUT_S = 600
# The names of the servers another tenant boots (:func:`preempt`).
OTHER_TENANT = 'other-tenant-'


def job_document(python, tasks=16, runtime_s=300, deadline_s=1500):
    """The example job: ``tasks`` demo computations of ``runtime_s``.

    Large preemptible servers are the cheapest per Gflop, so the plan
    fills the cloud with them; medium normal servers are the fallback.
    """
    command = '%s -m opie.testing.democloud.work %d' % (python, runtime_s)
    return {
        'job': {'name': 'demo', 'deadline_s': deadline_s},
        'policy': {'ac_s': 900, 'alpha_s': 60, 'max_normal': 6,
                   'dspot': 450},
        'flavors': {
            'large': {'vcpus': 4, 'ram_gb': 8, 'gflops': 80,
                      'price_h': {'preemptible': 0.06, 'normal': 0.20},
                      'limits': {'preemptible': 4, 'normal': 0}},
            'medium': {'vcpus': 2, 'ram_gb': 4, 'gflops': 40,
                       'price_h': {'preemptible': 0.04, 'normal': 0.10},
                       'limits': {'preemptible': 0, 'normal': 6}}},
        'tasks': [{'id': 't%02d' % i, 'command': command, 'memory_mb': 50,
                   'runtime_s': runtime_s} for i in range(1, tasks + 1)],
    }


def write_job(path, python, **kwargs):
    return dump_job(path, job_document(python, **kwargs))


def dump_job(path, document):
    """Write a job document as the job file ``path``."""
    with open(path, 'w', encoding='utf-8') as f:
        yaml.safe_dump(document, f, sort_keys=False)
    return path


def client_command(image, job_path, workdir, speed, extra=(),
                   os_cloud='demo'):
    """The ``opie-bot run`` command line for a job on the demo cloud (or
    another cloud of ``$workdir/clouds.yaml``)."""
    return [sys.executable, '-m', 'opie.bot.cli', 'run', job_path,
            '--backend', 'openstack', '--os-cloud', os_cloud,
            '--image', image, '--network', 'none',
            '--store', 'file://' + os.path.join(workdir, 'store'),
            '--speed', str(speed), '--poll', '0.3', '--agent-poll', '0.3',
            '--data-dir', workdir, '--progress-every', '150'] + list(extra)


def resume_command(workdir, job_id, verb='resume'):
    """``opie-bot resume`` (or ``status``, ``cancel``) of a demo job."""
    argv = [sys.executable, '-m', 'opie.bot.cli', verb, job_id,
            '--data-dir', workdir]
    return argv + (['--progress-every', '150'] if verb == 'resume' else [])


def client_env(workdir):
    env = dict(os.environ)
    env['OS_CLIENT_CONFIG_FILE'] = os.path.join(workdir, 'clouds.yaml')
    return env


def checkpointed(workdir):
    """Tasks with at least one checkpoint in the demo's store."""
    return len(glob.glob(os.path.join(workdir, 'store', '*', 'checkpoints',
                                      '*', 'latest.json')))


def job_servers(cloud):
    return [s for s in cloud.api.get_servers()
            if 'opie-job' in s.get('metadata', {})]


def preempt(cloud, wanted=2, boots=4):
    """Boot normal servers as another tenant would, until the OPIE
    scheduler preempted ``wanted`` of the job's servers or ``boots``
    servers were booted; how many it preempted."""
    job = [s['id'] for s in job_servers(cloud)]
    preempted = 0
    for i in range(boots):
        cloud.boot_normal('medium', '%s%d' % (OTHER_TENANT, i))
        # Victims are terminated after the answer: their instance actions
        # are written once these end.
        cloud.wait_for_terminations()
        preempted = sum(1 for uuid in job if cloud.preempt_actions(uuid))
        if preempted >= wanted:
            break
    return preempted


def run(cloud_mod, args):
    workdir = args.workdir or tempfile.mkdtemp(prefix='opie-demo-')
    cloud = cloud_mod.InProcessCloud(workdir=workdir)
    cloud.setUp()
    try:
        cloud.clouds_yaml(os.path.join(workdir, 'clouds.yaml'))
        job = write_job(os.path.join(workdir, 'demo.yaml'), sys.executable)
        out = sys.__stdout__
        out.write('in-process cloud: Nova API on %s, OPIE scheduler, '
                  'hosts %s; files in %s\n'
                  % (cloud.endpoint, ', '.join(cloud.HOSTS), workdir))
        out.flush()
        client = subprocess.Popen(
            client_command(cloud.image, job, workdir, args.speed),
            env=client_env(workdir))
        deadline = time.monotonic() + TIMEOUT_S
        fired = False
        while client.poll() is None and time.monotonic() < deadline:
            if not fired and checkpointed(workdir) >= 2:
                gone = preempt(cloud)
                out.write('another tenant booted normal servers: the OPIE '
                          'scheduler preempted %d of the job\'s servers\n'
                          % gone)
                out.flush()
                fired = True
            time.sleep(0.2)
        if client.poll() is None:
            client.kill()
            out.write('the client did not finish in %d s\n' % TIMEOUT_S)
        return client.wait()
    finally:
        # Nova says goodbye at INFO level once the harness' log capture is
        # gone; the demo's console keeps the job's summary last.
        logging.getLogger('nova').setLevel(logging.WARNING)
        cloud.doCleanups()
