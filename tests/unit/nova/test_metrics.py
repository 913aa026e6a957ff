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

"""The metrics textfile of a scheduler worker (issue 27: every series
there from the first write; a slot per worker, which a worker started in a
dead one's place takes again; the files of workers gone removed), and
where OPIE's state files go when nova.conf leaves ``state_path`` at
Nova's default.

Workers are real processes, as Nova forks them: each test decides from
the files they wrote and the processes it ended, never from timing."""
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


# A scheduler worker in its own process, as Nova forks them: each line on
# its stdin makes it write its metrics into DIRECTORY (argv 1) as host
# argv 2 and print the file's path; closing stdin ends it.
WORKER = """
import sys
from opie.nova import metrics
for line in sys.stdin:
    metrics.write(sys.argv[1], sys.argv[2])
    print(metrics.path(sys.argv[1], sys.argv[2]), flush=True)
"""


class Worker:

    def __init__(self, directory, host='sched-1'):
        self.process = subprocess.Popen(
            [sys.executable, '-c', WORKER, str(directory), host],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def write(self):
        """Write now; the path written."""
        self.process.stdin.write('\n')
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def stop(self):
        self.process.stdin.close()
        assert self.process.wait() == 0
        self.process.stdout.close()


def test_each_worker_writes_its_own_labelled_file(tmp_path):
    metrics.PREEMPTIONS.labels(mode='shelve', reason='claimed').inc()

    metrics.write(str(tmp_path / 'textfile'), 'sched-1')

    path = metrics.path(str(tmp_path / 'textfile'), 'sched-1')
    assert os.path.basename(path) == 'opie-scheduler.sched-1.0.prom'
    found = samples(path)
    assert found and all(s.labels['host'] == 'sched-1'
                         and s.labels['worker'] == '0'
                         and 'pid' not in s.labels for s in found)
    [preempted] = [s for s in found if s.name == 'opie_preemptions_total'
                   and s.labels['mode'] == 'shelve'
                   and s.labels['reason'] == 'claimed']
    assert preempted.value == metrics.value(
        'opie_preemptions_total', mode='shelve', reason='claimed')
    assert not [s for s in found if s.name.endswith('_created')]
    # Written atomically: no temporary file is left, only the worker's
    # file and the locks of its slot and of the directory.
    assert sorted(os.listdir(tmp_path / 'textfile')) == [
        'opie-scheduler.lock', 'opie-scheduler.sched-1.0.lock',
        'opie-scheduler.sched-1.0.prom']


# Every label value of every labelled counter, as an operator's rules
# name them.
SERIES = {
    'opie_preemptions_total': [
        {'mode': mode, 'reason': reason} for mode in ('delete', 'shelve')
        for reason in ('request', 'room-taken', 'claimed', 'reconcile',
                       'lifetime')],
    'opie_termination_failures_total': [
        {'mode': 'delete'}, {'mode': 'shelve'}],
    'opie_claim_conflicts_total': [
        {'writer': 'scheduler'}, {'writer': 'reconciler'}],
    'opie_no_room_total': [
        {'preemptible': p} for p in ('true', 'false', 'unknown')],
    'opie_reconciler_repairs_total': [
        {'kind': 'claimed'}, {'kind': 'overcommit'}],
}


def test_every_series_is_written_at_zero_from_the_first_write(tmp_path):
    # A worker just started: increase() sees its first failure only if
    # the series was there, at 0, before it.
    worker = Worker(tmp_path)
    found = samples(worker.write())
    worker.stop()

    written = {}
    for s in found:
        labels = {k: v for k, v in s.labels.items()
                  if k not in ('host', 'worker')}
        written.setdefault(s.name, []).append((labels, s.value))
    for name, series in SERIES.items():
        assert sorted(written[name], key=str) == sorted(
            ((labels, 0.0) for labels in series), key=str), name
    for name in ('opie_claim_retries_total',
                 'opie_claim_hosts_abandoned_total', 'opie_safe_mode',
                 'opie_lease_holder',
                 'opie_last_reconcile_success_timestamp_seconds',
                 'opie_victims_per_request_count',
                 'opie_select_destinations_seconds_count',
                 'opie_notice_given_seconds_count',
                 'opie_notice_held_seconds_count'):
        assert written[name] == [({}, 0.0)], name


def test_a_restarted_worker_takes_the_slot_of_the_one_gone(tmp_path):
    first, second = Worker(tmp_path), Worker(tmp_path)
    paths = [first.write(), second.write()]
    assert [os.path.basename(p) for p in paths] == [
        'opie-scheduler.sched-1.0.prom', 'opie-scheduler.sched-1.1.prom']
    # Another scheduler service sharing the directory has its own slots.
    other = Worker(tmp_path, 'sched-2')
    assert os.path.basename(other.write()) == 'opie-scheduler.sched-2.0.prom'
    first.stop()

    restarted = Worker(tmp_path)
    path = restarted.write()

    assert path == paths[0]
    assert {s.labels['worker'] for s in samples(path)} == {'0'}
    for worker in (second, other, restarted):
        worker.stop()


def test_files_of_workers_gone_are_removed(tmp_path):
    gone, alive = Worker(tmp_path), Worker(tmp_path)
    dead, kept = gone.write(), alive.write()
    gone.stop()
    # A file of an older OPIE (named by pid), and another exporter's.
    legacy = tmp_path / 'opie-scheduler.4242.prom'
    other = tmp_path / 'node.prom'
    for path in (legacy, other):
        path.write_text('')

    assert alive.write() == kept

    assert sorted(p for p in os.listdir(tmp_path) if p.endswith('.prom')) \
        == ['node.prom', os.path.basename(kept)]
    assert not os.path.exists(dead[:-len('.prom')] + '.lock')
    alive.stop()


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
