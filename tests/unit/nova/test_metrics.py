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

"""The metrics textfile of a scheduler worker, and where OPIE's state
files go when nova.conf leaves ``state_path`` at Nova's default."""
import os
import subprocess
import sys

from oslo_config import cfg
from prometheus_client import parser

from opie.nova import conf as opie_conf
from opie.nova import metrics


def samples(path):
    with open(path, encoding='utf-8') as f:
        return [s for family in parser.text_string_to_metric_families(
            f.read()) for s in family.samples]


def test_each_worker_writes_its_own_labelled_file(tmp_path):
    metrics.PREEMPTIONS.labels(mode='shelve', reason='claimed').inc()

    metrics.write(str(tmp_path / 'textfile'), 'sched-1')

    path = metrics.path(str(tmp_path / 'textfile'))
    assert os.path.basename(path) == 'opie-scheduler.%d.prom' % os.getpid()
    found = samples(path)
    assert found and all(s.labels['host'] == 'sched-1'
                         and s.labels['pid'] == str(os.getpid())
                         for s in found)
    [preempted] = [s for s in found if s.name == 'opie_preemptions_total'
                   and s.labels['mode'] == 'shelve']
    assert preempted.value == metrics.value(
        'opie_preemptions_total', mode='shelve', reason='claimed')
    assert not [s for s in found if s.name.endswith('_created')]
    # Written atomically: nothing else is left in the directory.
    assert os.listdir(tmp_path / 'textfile') == [os.path.basename(path)]


def test_files_of_workers_gone_are_removed(tmp_path):
    gone = subprocess.run([sys.executable, '-c', 'import os; '
                           'print(os.getpid())'], capture_output=True,
                          check=True, text=True)
    dead = metrics.path(str(tmp_path), int(gone.stdout))
    alive = metrics.path(str(tmp_path), os.getppid())
    other = tmp_path / 'node.prom'
    for path in (dead, alive, other):
        with open(path, 'w') as f:
            f.write('')

    metrics.write(str(tmp_path), 'sched-1')

    assert sorted(os.listdir(tmp_path)) == sorted(
        os.path.basename(p) for p in (alive, other, metrics.path(
            str(tmp_path))))


def _conf(tmp_path, state_path=None, metrics_dir=None):
    """nova.conf read as Nova reads it: [DEFAULT] state_path and [opie]
    metrics_dir as given (unset if None)."""
    text = ''
    if state_path is not None:
        text += '[DEFAULT]\nstate_path = %s\n' % state_path
    if metrics_dir is not None:
        text += '[opie]\nmetrics_dir = %s\n' % metrics_dir
    path = tmp_path / 'nova.conf'
    path.write_text(text)
    conf = cfg.ConfigOpts()
    conf.register_opts([
        cfg.StrOpt('pybasedir', default=opie_conf._nova_pybasedir()),
        cfg.StrOpt('state_path', default='$pybasedir')])
    opie_conf.register_opts(conf)
    conf(['--config-file', str(path)])
    return conf


def test_state_path_left_at_novas_default_means_var_lib_nova(
        tmp_path, monkeypatch):
    monkeypatch.setattr(opie_conf, '_nova_pybasedir',
                        lambda: str(tmp_path / 'site-packages'))
    conf = _conf(tmp_path, metrics_dir='$state_path/opie-metrics')
    conf.set_override('pybasedir', str(tmp_path / 'site-packages'))
    assert (conf.opie.heartbeat_path
            == '/var/lib/nova/opie-scheduler.heartbeat')
    assert conf.opie.metrics_dir == '/var/lib/nova/opie-metrics'


def test_state_path_without_nova_means_var_lib_nova(tmp_path):
    assert (_conf(tmp_path, state_path='').opie.heartbeat_path
            == '/var/lib/nova/opie-scheduler.heartbeat')


def test_a_state_path_set_is_kept(tmp_path):
    conf = _conf(tmp_path, state_path='/srv/nova',
                 metrics_dir='$state_path/metrics')
    assert conf.opie.heartbeat_path == '/srv/nova/opie-scheduler.heartbeat'
    assert conf.opie.metrics_dir == '/srv/nova/metrics'
    assert _conf(tmp_path).opie.metrics_dir is None
