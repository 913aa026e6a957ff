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

"""Prometheus metrics of the OPIE scheduler, for dashboards and alerts.

Each scheduler worker counts in its own registry (:data:`REGISTRY`, one
per process: Nova forks its workers after importing this module, so each
starts from zero). Every series a worker can count is there from its first
write, at 0: each labelled counter with every value of its labels, so that
``increase()`` sees the first event after a restart too. With ``[opie]
metrics_dir`` set, each worker writes its file for node_exporter's
textfile collector, atomically, every ``[opie] heartbeat_interval``
seconds and after each preemption, under the lowest free *slot* of its
service, held by a ``flock``: the worker Nova forks in a dead one's place
takes its slot, file and series again. The capacity gauges are the
leader's only, from what its reconcile pass reads anyway.

The metrics, their labels and the export: ``doc/source/operator/
monitoring.rst``.
"""
import contextlib
import fcntl
import glob
import itertools
import os
import re
import threading

from oslo_config import cfg
from oslo_log import log as logging
import prometheus_client
from prometheus_client import metrics_core

from opie.core import contract
from opie.core import preemptible
from opie.core import resources as res
from opie.nova import conf as opie_conf  # also registers [opie]

LOG = logging.getLogger(__name__)
REGISTRY = prometheus_client.CollectorRegistry()
FILE_PREFIX = 'opie-scheduler.'
DIRECTORY_LOCK = 'opie-scheduler.lock'
_write_lock = threading.Lock()

# Every value of each label, so that each series is there from the start.
MODES = (opie_conf.DELETE, opie_conf.SHELVE)
REASONS = ('request', 'room-taken', 'claimed', 'reconcile', 'lifetime')
WRITERS = ('scheduler', 'reconciler')
REQUEST_KINDS = ('true', 'false', 'unknown')
# Reconciler notification reasons -> repair kinds.
_REPAIR_KINDS = {'claimed': 'claimed', 'reconcile': 'overcommit'}
# The host class of hosts in no aggregate.
NO_AGGREGATE = '(none)'


def _counter(name, documentation, **labels):
    """A counter with a series, at 0, for every combination of the values
    ``labels`` (label -> values) lists."""
    counter = prometheus_client.Counter(name, documentation, list(labels),
                                        registry=REGISTRY)
    if labels:
        for values in itertools.product(*labels.values()):
            counter.labels(*values)
    return counter


PREEMPTIONS = _counter(
    'opie_preemptions', 'Preemptible instances terminated.',
    mode=MODES, reason=REASONS)
TERMINATION_FAILURES = _counter(
    'opie_termination_failures', 'Victims OPIE could not terminate.',
    mode=MODES)
VICTIMS_PER_REQUEST = prometheus_client.Histogram(
    'opie_victims_per_request',
    'Victims claimed by each scheduling request placed.',
    buckets=(0, 1, 2, 3, 4, 6, 8, 12, 16, 32), registry=REGISTRY)
CLAIM_CONFLICTS = _counter(
    'opie_claim_conflicts',
    'Placement writes refused because the host changed since read.',
    writer=WRITERS)
CLAIM_RETRIES = _counter(
    'opie_claim_retries', 'Claims decided anew on the same host.')
HOSTS_ABANDONED = _counter(
    'opie_claim_hosts_abandoned',
    'Hosts given up after changing under every retry.')
NO_ROOM = _counter(
    'opie_no_room', 'Requests that failed with NoValidHost.',
    preemptible=REQUEST_KINDS)
RECONCILER_REPAIRS = _counter(
    'opie_reconciler_repairs', 'Instances the reconciler took.',
    kind=sorted(set(_REPAIR_KINDS.values())))
# Up to the longest notice and the stop after it.
_NOTICE_BUCKETS = (1, 5, 10, 20, 30, 60, 120, 300, 600, 900, 1200)
SELECT_SECONDS = prometheus_client.Histogram(
    'opie_select_destinations_seconds',
    'Time taken to answer select_destinations.',
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30) + _NOTICE_BUCKETS[5:],
    registry=REGISTRY)
NOTICE_GIVEN = prometheus_client.Histogram(
    'opie_notice_given_seconds',
    'Seconds from a victim\'s notice being readable to its stop.',
    buckets=_NOTICE_BUCKETS, registry=REGISTRY)
NOTICE_HELD = prometheus_client.Histogram(
    'opie_notice_held_seconds',
    'Seconds a request\'s answer was held for its victims\' notices.',
    buckets=_NOTICE_BUCKETS, registry=REGISTRY)
SAFE_MODE = prometheus_client.Gauge(
    'opie_safe_mode', '1 when opie-scheduler runs in safe mode.',
    registry=REGISTRY)
LEASE_HOLDER = prometheus_client.Gauge(
    'opie_lease_holder', '1 on the worker holding the reconciler lease.',
    registry=REGISTRY)
LAST_RECONCILE = prometheus_client.Gauge(
    'opie_last_reconcile_success_timestamp_seconds',
    'When this worker last finished a reconcile pass (0: never).',
    registry=REGISTRY)
CAPACITY = prometheus_client.Gauge(
    'opie_capacity', 'Schedulable capacity of the aggregate\'s hosts.',
    ['aggregate', 'resource'], registry=REGISTRY)
NORMAL_FREE = prometheus_client.Gauge(
    'opie_normal_free',
    'Room normal requests can get (capacity less normal usage).',
    ['aggregate', 'resource'], registry=REGISTRY)
PREEMPTIBLE_FREE = prometheus_client.Gauge(
    'opie_preemptible_free',
    'Room preemptible requests can get (capacity less all usage).',
    ['aggregate', 'resource'], registry=REGISTRY)
_HOST_CLASS_GAUGES = (CAPACITY, NORMAL_FREE, PREEMPTIBLE_FREE)


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
            str(contract.is_preemptible(flavor.extra_specs)).lower())
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


def lease(held):
    """Whether this worker holds the reconciler lease now. One that does
    not exports no capacity: what it last read is the holder's to tell."""
    LEASE_HOLDER.set(1 if held else 0)
    if not held:
        for gauge in _HOST_CLASS_GAUGES:
            gauge.clear()


def reconciled():
    """A reconcile pass went to its end, now."""
    LAST_RECONCILE.set_to_current_time()


def host_classes(host_states, records):
    """Set the capacity gauges from each compute node's HostState (for
    its aggregates) and HostRecord as a reconcile pass read it from
    Placement (its preemptibles not loaded)."""
    sums = {}
    for host_state, record in zip(host_states, records):
        amounts = (record.capacity,
                   _room(record.capacity - record.normal_used),
                   _room(record.free_full()))
        for name in sorted({a.name for a in host_state.aggregates}) or [
                NO_AGGREGATE]:
            for gauge, amount in zip(_HOST_CLASS_GAUGES, amounts):
                sums[gauge, name] = sums.get((gauge, name), res.ZERO) + amount
    for gauge in _HOST_CLASS_GAUGES:
        gauge.clear()
    for (gauge, name), amounts in sums.items():
        for rc, amount in zip(preemptible.STANDARD, amounts):
            gauge.labels(aggregate=name, resource=rc).set(amount)


def _room(free):
    """Free room, none where a host is over capacity."""
    return res.Resources(*(max(0, amount) for amount in free))


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


class _Slot:
    """The slot this process holds: its key (pid, directory, host), index
    and the descriptor its lock is held on."""

    def __init__(self, key, index, fd):
        self.key = key
        self.index = index
        self.fd = fd


_slot = None


def _stem(directory, host, index):
    """The slot's files, but their extension; ``host`` made a safe file
    name part."""
    return os.path.join(directory, '%s%s.%d' % (
        FILE_PREFIX, re.sub(r'[^A-Za-z0-9_.-]', '_', host), index))


@contextlib.contextmanager
def _directory_locked(directory):
    """Hold the directory's lock: one process claims or removes slots at
    a time."""
    fd = _open(os.path.join(directory, DIRECTORY_LOCK), create=True)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _open(path, create=False):
    return os.open(path, os.O_RDONLY | os.O_CLOEXEC
                   | (os.O_CREAT if create else 0), 0o644)


def _locked(fd):
    """Lock ``fd`` for this process if no other holds it: True if
    locked."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _claim(directory, host):
    """This worker's slot index in ``directory`` (held for its life: a
    forked worker lets go of its parent's); the directory's lock held."""
    global _slot
    key = (os.getpid(), directory, host)
    if _slot is not None and _slot.key == key:
        return _slot.index
    if _slot is not None:
        os.close(_slot.fd)
        _slot = None
    for index in itertools.count():
        fd = _open(_stem(directory, host, index) + '.lock', create=True)
        if _locked(fd):
            _slot = _Slot(key, index, fd)
            return index
        os.close(fd)


def _sweep(directory, own):
    """Remove the files of the slots no process holds, but ``own``; the
    directory's lock held."""
    found = {path.rsplit('.', 1)[0] for extension in ('prom', 'lock')
             for path in glob.glob(os.path.join(
                 directory, '%s*.%s' % (FILE_PREFIX, extension)))}
    for stem in found - {own}:
        try:
            fd = _open(stem + '.lock')
        except FileNotFoundError:
            fd = None  # no slot: an older OPIE's file, named by pid
        if fd is not None and not _locked(fd):
            os.close(fd)  # its worker runs
            continue
        try:
            for extension in ('.prom', '.lock'):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(stem + extension)
        finally:
            if fd is not None:
                os.close(fd)


def path(directory, host):
    """This worker's file in ``directory`` for ``host`` (its slot claimed
    if need be)."""
    os.makedirs(directory, exist_ok=True)
    with _write_lock, _directory_locked(directory):
        return _stem(directory, host, _claim(directory, host)) + '.prom'


def write(directory, host):
    """Write this worker's metrics into ``directory`` now; remove the
    files of workers no longer running."""
    os.makedirs(directory, exist_ok=True)
    with _write_lock, _directory_locked(directory):
        index = _claim(directory, host)
        stem = _stem(directory, host, index)
        prometheus_client.write_to_textfile(
            stem + '.prom', _Labelled({'host': host,
                                       'worker': str(index)}))
        _sweep(directory, stem)


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


def value(name, **labels):
    """A sample's value in this process (None if never set): for tests."""
    return REGISTRY.get_sample_value(name, labels)
