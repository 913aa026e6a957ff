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

"""Prometheus metrics of the OPIE scheduler.

Each scheduler worker counts in its own registry (:data:`REGISTRY`, one
per process: Nova forks its workers after importing this module, so each
starts from zero). The metrics, all prefixed ``opie_``:

``opie_preemptions_total{mode, reason}`` (counter)
    Preemptible instances terminated (``mode``: ``delete`` or ``shelve``).
    ``reason`` is ``request`` (room made for a scheduling request),
    ``room-taken`` (taken by a request that then failed, its room gone to
    others meanwhile), ``claimed`` or ``reconcile`` (by the reconciler).
``opie_termination_failures_total{mode}`` (counter)
    Victims OPIE could not terminate (logged; the reconciler retries).
``opie_victims_per_request`` (histogram)
    Victims claimed by each scheduling request that succeeded (all the
    instances of a multi-create together); 0 when it fitted in free room,
    so ``_count`` is the number of requests placed.
``opie_claim_conflicts_total{writer}`` (counter)
    Writes Placement refused because the host changed since it was read
    (another worker, the reconciler or Nova wrote to it). ``writer`` is
    ``scheduler`` or ``reconciler``.
``opie_claim_retries_total`` (counter)
    Claims decided anew on the same host after a refused write or a
    victim found gone.
``opie_claim_hosts_abandoned_total`` (counter)
    Hosts a request gave up after that many retries in a row; Nova then
    tries its next host.
``opie_no_room_total{preemptible}`` (counter)
    Requests that failed with NoValidHost (``preemptible``: ``true`` or
    ``false``, the request's kind; ``unknown`` for a legacy call).
    Normal requests failing mean that even
    preempting could not make room.
``opie_reconciler_repairs_total{kind}`` (counter)
    Instances the reconciler took: ``claimed`` (claimed victims left
    running) or ``overcommit`` (preemptibles of a host over capacity).
``opie_select_destinations_seconds`` (histogram)
    Time the scheduler took to answer ``select_destinations``, whether it
    succeeded or not.
``opie_safe_mode`` (gauge)
    1 when ``opie-scheduler`` runs in safe mode (a Nova this OPIE was not
    built for: :mod:`.safe_mode`): nothing is preempted. Alert on it.

Export: set ``[opie] metrics_dir`` to node_exporter's textfile collector
directory (``--collector.textfile.directory``). Each worker then writes
its own file ``opie-scheduler.<pid>.prom`` there, atomically (a new file
renamed over the old), every ``[opie] heartbeat_interval`` seconds and
after each preemption, with the labels ``host`` (Nova's ``[DEFAULT]
host``) and ``pid`` on every sample, so the workers' series never collide
(sum them: ``sum by (mode) (rate(opie_preemptions_total[5m]))``). A
worker removes the files of workers no longer running; a worker's counters
restart at zero with it, which ``rate()`` and ``increase()`` handle as a
counter reset. Unset (the default), nothing is written.
"""
import glob
import os
import re
import threading

from oslo_config import cfg
from oslo_log import log as logging
import prometheus_client
from prometheus_client import metrics_core

from opie.core import preemptible
from opie.nova import conf as opie_conf  # noqa: F401 (registers [opie])

LOG = logging.getLogger(__name__)
REGISTRY = prometheus_client.CollectorRegistry()
FILE_PREFIX = 'opie-scheduler.'
_FILE = re.compile(r'^opie-scheduler\.(\d+)\.prom$')
_write_lock = threading.Lock()

PREEMPTIONS = prometheus_client.Counter(
    'opie_preemptions', 'Preemptible instances terminated.',
    ['mode', 'reason'], registry=REGISTRY)
TERMINATION_FAILURES = prometheus_client.Counter(
    'opie_termination_failures', 'Victims OPIE could not terminate.',
    ['mode'], registry=REGISTRY)
VICTIMS_PER_REQUEST = prometheus_client.Histogram(
    'opie_victims_per_request',
    'Victims claimed by each scheduling request placed.',
    buckets=(0, 1, 2, 3, 4, 6, 8, 12, 16, 32), registry=REGISTRY)
CLAIM_CONFLICTS = prometheus_client.Counter(
    'opie_claim_conflicts',
    'Placement writes refused because the host changed since read.',
    ['writer'], registry=REGISTRY)
CLAIM_RETRIES = prometheus_client.Counter(
    'opie_claim_retries', 'Claims decided anew on the same host.',
    registry=REGISTRY)
HOSTS_ABANDONED = prometheus_client.Counter(
    'opie_claim_hosts_abandoned',
    'Hosts given up after changing under every retry.',
    registry=REGISTRY)
NO_ROOM = prometheus_client.Counter(
    'opie_no_room', 'Requests that failed with NoValidHost.',
    ['preemptible'], registry=REGISTRY)
RECONCILER_REPAIRS = prometheus_client.Counter(
    'opie_reconciler_repairs', 'Instances the reconciler took.',
    ['kind'], registry=REGISTRY)
SELECT_SECONDS = prometheus_client.Histogram(
    'opie_select_destinations_seconds',
    'Time taken to answer select_destinations.',
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
    registry=REGISTRY)
SAFE_MODE = prometheus_client.Gauge(
    'opie_safe_mode', '1 when opie-scheduler runs in safe mode.',
    registry=REGISTRY)

# Reconciler notification reasons -> repair kinds.
_REPAIR_KINDS = {'claimed': 'claimed', 'reconcile': 'overcommit'}


# hooks -------------------------------------------------------------------
def placed(plan):
    """A request placed: how many victims it claimed."""
    VICTIMS_PER_REQUEST.observe(
        sum(len(p.victims) for p in plan.preemptions))


def no_room(spec_obj):
    """A request (a RequestSpec, None if unknown) failed with
    NoValidHost."""
    flavor = getattr(spec_obj, 'flavor', None)
    kind = ('unknown' if flavor is None else
            str(preemptible.is_preemptible(flavor.extra_specs)).lower())
    NO_ROOM.labels(preemptible=kind).inc()


def terminated(preemption, done, request_info, mode):
    """``done`` of ``preemption``'s victims were terminated; export."""
    reason = request_info.get('reason', 'request')
    if done:
        PREEMPTIONS.labels(mode=mode, reason=reason).inc(len(done))
    failed = len(preemption.victims) - len(done)
    if failed:
        TERMINATION_FAILURES.labels(mode=mode).inc(failed)
    kind = _REPAIR_KINDS.get(reason)
    if kind:
        RECONCILER_REPAIRS.labels(kind=kind).inc(len(preemption.victims))
    export()


# export ------------------------------------------------------------------
class _Labelled:
    """:data:`REGISTRY`'s samples with ``labels`` added (no ``_created``
    samples: they would only repeat the worker's start time)."""

    def __init__(self, labels):
        self.labels = labels

    def collect(self):
        for family in REGISTRY.collect():
            labelled = metrics_core.Metric(family.name, family.documentation,
                                           family.type, family.unit)
            labelled.samples = [
                s._replace(labels=dict(s.labels, **self.labels))
                for s in family.samples if not s.name.endswith('_created')]
            yield labelled


def path(directory, pid=None):
    """The file of worker ``pid`` (this one by default)."""
    return os.path.join(directory, '%s%d.prom' % (
        FILE_PREFIX, os.getpid() if pid is None else pid))


def write(directory, host):
    """Write this worker's metrics into ``directory`` now; remove the
    files of workers no longer running."""
    os.makedirs(directory, exist_ok=True)
    with _write_lock:
        prometheus_client.write_to_textfile(
            path(directory), _Labelled({'host': host,
                                        'pid': str(os.getpid())}))
    for found in glob.glob(os.path.join(directory, FILE_PREFIX + '*.prom')):
        match = _FILE.match(os.path.basename(found))
        if match and not _running(int(match.group(1))):
            try:
                os.unlink(found)
            except FileNotFoundError:
                pass


def export():
    """:func:`write` to ``[opie] metrics_dir``, if set; never raises."""
    conf = cfg.CONF
    directory = conf.opie.metrics_dir
    if not directory:
        return
    try:
        write(directory, conf.host)
    except OSError as exc:
        LOG.warning('OPIE: cannot write metrics into %s: %s', directory,
                    exc)


def _running(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def value(name, **labels):
    """A sample's value in this process (None if never set): for tests."""
    return REGISTRY.get_sample_value(name, labels)
