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

"""opie-scheduler refuses a Nova it was not built for, before it serves."""
import os
import subprocess
import sys

import opie
from opie.nova import compat


def test_the_installed_nova_is_supported():
    assert compat.problem() is None


def another_release(tmp_path):
    """The environment of a process whose importlib.metadata reports Nova
    35.1.0."""
    (tmp_path / 'sitecustomize.py').write_text(
        'import importlib.metadata as m\n'
        'real = m.version\n'
        'm.version = lambda name: "35.1.0" if name == "nova" '
        'else real(name)\n')
    return dict(os.environ, PYTHONPATH=str(tmp_path))


def test_another_release_starts_the_scheduler_in_safe_mode(tmp_path):
    # The real command, in its own process (it monkey patches at import),
    # up to the moment Nova's scheduler command would start the service.
    done = subprocess.run(
        [sys.executable, '-c',
         'from nova.cmd import scheduler\n'
         'from nova import service\n'
         'from opie.nova import cmd\n'
         'scheduler.main = lambda: print(\n'
         '    service.SERVICE_MANAGERS["nova-scheduler"])\n'
         'cmd.main()'], env=another_release(tmp_path),
        capture_output=True, text=True, timeout=300)

    assert done.returncode == 0, done.stderr
    assert done.stdout == 'opie.nova.safe_mode.SafeModeSchedulerManager\n'
    assert done.stderr.strip().splitlines()[-1] == (
        'opie-scheduler: Nova 35.1.0 is not supported: this OPIE runs on '
        'Nova 34.x (2026.2); starting in SAFE MODE: nothing is preempted')


def test_a_bad_opie_option_stops_the_scheduler_with_one_line(tmp_path):
    # Read before Nova imports the manager, whose periodic tasks read
    # heartbeat_interval at import.
    conf = tmp_path / 'nova.conf'
    conf.write_text('[opie]\nheartbeat_interval = 0\n')
    here = os.path.dirname(os.path.dirname(opie.__file__))
    env = dict(os.environ, PYTHONPATH=here)
    done = subprocess.run(
        [sys.executable, '-c', 'from opie.nova import cmd; cmd.main()',
         '--config-file', str(conf)], env=env, capture_output=True,
        text=True, timeout=300, cwd=str(tmp_path))

    assert done.returncode == 1
    assert done.stderr == (
        'opie-scheduler: [opie] heartbeat_interval is not valid: Should be '
        'greater than or equal to 1 (allowed: an integer >= 1 and <= '
        '31536000)\n')


def test_a_changed_hook_is_named(monkeypatch):
    from nova.scheduler import manager

    def _schedule(self, context, spec_obj, instance_uuids, alloc_reqs,
                  provider_summaries):
        pass

    monkeypatch.setattr(manager.SchedulerManager, '_schedule', _schedule)

    assert compat.problem() == (
        'Nova 34.0.0 changed SchedulerManager._schedule(context, spec_obj, '
        'instance_uuids, alloc_reqs, provider_summaries), which OPIE '
        'overrides')


def test_a_missing_hook_is_named(monkeypatch):
    from nova.scheduler.client import report
    monkeypatch.delattr(report.SchedulerReportClient, 'claim_resources')

    assert 'has no nova.scheduler.client.report.SchedulerReportClient.' \
        'claim_resources' in compat.problem()


def test_a_required_parameter_added_to_a_hook_is_named(monkeypatch):
    from nova.scheduler import manager

    def _get_all_host_states(self, context, spec_obj, provider_summaries,
                             cells):
        pass

    monkeypatch.setattr(manager.SchedulerManager, '_get_all_host_states',
                        _get_all_host_states)

    assert 'changed SchedulerManager._get_all_host_states(context, ' \
        'spec_obj, provider_summaries, cells)' in compat.problem()
