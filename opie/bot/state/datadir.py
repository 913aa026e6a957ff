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

"""Where ``opie-bot`` keeps a user's jobs: one data directory per user.

``--data-dir``, else ``$OPIE_BOT_DATA``, else ``$XDG_DATA_HOME/opie-bot``,
else ``~/.local/share/opie-bot`` (the XDG base directory default), so
``status``, ``resume`` and ``list`` find a job from any working directory.
It holds ``jobs/<job id>.sqlite`` (each job's journal and its lock),
``reports/`` (the JSON and HTML reports of runs) and
``<job id>/outputs/<task>/`` (the files a job's tasks declared as their
outputs).
"""
import os

ENV = 'OPIE_BOT_DATA'


def default(environ=None):
    environ = os.environ if environ is None else environ
    if environ.get(ENV):
        return environ[ENV]
    base = environ.get('XDG_DATA_HOME') or os.path.join(
        os.path.expanduser('~'), '.local', 'share')
    return os.path.join(base, 'opie-bot')


def jobs(root):
    return os.path.join(root, 'jobs')


def reports(root):
    return os.path.join(root, 'reports')


def outputs(job_id, task_id):
    """Where a task's outputs go, relative to the data directory."""
    return '%s/outputs/%s' % (job_id, task_id)


def of_jobs(jobs_dir):
    """The data directory whose :func:`jobs` is ``jobs_dir``."""
    return os.path.dirname(os.path.abspath(jobs_dir))
