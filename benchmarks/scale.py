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

"""OPIE at scale: stock Nova against OPIE on 10 to 5000 compute nodes.

For each N (``--nodes``, default 10 100 1000) an in-process Nova 34 +
Placement cloud is built with one compute service whose fake driver serves
N nodes of 32 vCPU, 64 GB and 2 TB, each with OPIE's provider config. Three
cases are timed there, interleaved so that drift hits all of them:

* **stock, empty**: Nova's own ``SchedulerManager`` (Nova's filters and
  weighers) placing a normal medium server (2 vCPU) on the empty cloud;
* **OPIE, empty**: ``OpieSchedulerManager`` (OPIE's filter and weighers
  added) placing the same request;
* **OPIE, saturated**: every node then holds 20 preemptible instances of
  mixed sizes and ages (12 small, 6 medium, 2 large: every vCPU taken;
  launch times spread over ten hours), so each request preempts: OPIE
  claims the victims in the same Placement write as the server. The
  termination that would follow in the background is not run: after each
  timed call the server's allocations are removed and the victims'
  restored, so that every call meets the same saturated cloud. Its first
  call reads every node's preemptibles into the instance cache (printed
  apart); OPIE's periodic warm-up then runs once, untimed, as it does
  every 5 minutes in a worker serving a cloud that filled over more than
  that;
* **stock, saturated**: Nova's own scheduler placing the same request on
  the saturated cloud, interleaved with OPIE's calls there: it does not
  see the preemptibles (they hold only OPIE's classes in Placement, and
  the compute nodes' records were not told of them) and overcommits the
  node it picks. Its calls are the baseline measured at the same time as
  OPIE's saturated calls, which the empty cloud's, measured minutes
  earlier, are not: the machine's speed may have moved meanwhile. It
  shares OPIE's collector, though: collections OPIE's objects cause may
  fall in its calls, and its full collections scan what OPIE keeps
  unfrozen.

The preemptible instances are written straight into the cell database and
their allocations into Placement (one ``POST /allocations`` per node), as
Nova would have left them: booting 20,000 servers through the API would
take hours and measure nothing more.

A restart is timed as its own case, against stock's first call after a
restart (a new ``SchedulerManager``: its HostManager builds every node's
state on its first call) on the empty cloud:

* **OPIE, restarted**: a new ``OpieSchedulerManager`` on the saturated
  cloud, warmed as a worker is before it serves (``pre_start_hook``,
  untimed, its time and SQL printed apart), then its first call timed.

The machine's speed moves over the minutes between the empty cloud's
calls and the saturated cloud's (stock's saturated calls came out a third
faster than its empty cloud's in one run on a shared 2-core machine), and
a ratio of calls timed minutes apart moves with it. So a **twin**, a
second process started with this one (``--no-twin``: none), builds an
empty cloud of the same nodes and, when asked, times one call of stock's
there, always the same, while this process waits: a meter of the
machine's speed. Its calls are interleaved with those of each phase
(``twin: ...`` rows): the empty cloud's cases, stock's restarts, the
saturated cloud's cases and OPIE's restarts. The saturated ratio is then
printed corrected for drift, against stock's empty calls times the twin's
saturated phase over its empty phase, and the restart ratio against
stock's restarts times the twin's beside OPIE's restarts over its beside
stock's. The twin is no baseline itself: on the same empty cloud, in the
same minutes, its calls took 0.87 of this process's stock's in one run
(the two processes hold and have run different things); what it tells is
how its own calls move from phase to phase.

The stock manager is no RPC service, so it would hear none of the
compute's instance updates and read every node's instances on every
request: it shares those the OPIE scheduler service heard, as a stock
scheduler service hears its own.

Per request it counts the SQL statements each database runs (Nova's API
database, the cell database, Placement's own) and the scheduler's
Placement requests; it measures the peak memory Python allocates during
one request (tracemalloc, in an untimed call), what a warmed worker keeps
(a new instance cache warmed as before serving: every node's
preemptibles), the first call's time of a cold cache (it reads every
candidate node) and the process's resident memory, and prints the
ratios OPIE/stock measured in this run.

This process holds the whole cloud: Placement and its database, the
compute service and its N nodes, 20 N instances. A scheduler process holds
none of it, but Python's collector would scan it all in each full
collection (about 300 ms at 1000 nodes), in whichever call it happens to
fall, so the medians would tell which calls it fell in. The cloud is
therefore built without the collector and then frozen out of its reach
(``gc.freeze``), once for the nodes and once for the saturation; what the
schedulers create and keep afterwards (Nova's host states, OPIE's
instance cache) is collected as in a scheduler process (where OPIE's
warm-ups freeze what they leave, ``[opie] freeze_after_warm_up``, they
freeze the cloud again with it), and the collector's time within each
call is printed (``gc ms``, median), with
its full collections per call (``full gc``, mean). A full collection
takes tens of milliseconds whoever's objects it scans, and falls in a
call or not: over five calls, one collection more or less in most of
them moves a median by that much.

Goals (issue 28): at N = 1000, OPIE/stock median <= 1.1 on the empty
cloud and <= 1.3 on the saturated cloud (printed against stock's calls
on the empty cloud, as timed and corrected for drift, and against stock's
calls on the saturated one, interleaved), and OPIE's first call after a
restart <= 2.0 x stock's first call after a restart (as timed and
corrected for drift); at N = 5000 the same, but <= 1.5 saturated; OPIE's
database queries per request do not grow with N. Run from the repository
root: ``python benchmarks/scale.py [--nodes 10 100 1000 5000]
[--iterations N] [--collect-between] [--no-freeze] [--no-twin]``.
"""
import nova.tests.functional  # noqa: F401 (monkey patching comes first)

import argparse  # noqa: E402
import collections  # noqa: E402
import contextlib  # noqa: E402
import copy  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from unittest import mock  # noqa: E402

from oslo_utils import timeutils  # noqa: E402
from oslo_utils import uuidutils  # noqa: E402
from sqlalchemy import engine as sqla_engine  # noqa: E402
from sqlalchemy import event  # noqa: E402

from nova.compute import power_state  # noqa: E402
from nova.compute import vm_states  # noqa: E402
import nova.conf  # noqa: E402
from nova import context as nova_context  # noqa: E402
from nova.db.api import api as api_db  # noqa: E402
from nova import objects  # noqa: E402
from nova.scheduler import host_manager  # noqa: E402
from nova.scheduler import manager as nova_manager  # noqa: E402
from nova.scheduler import utils as scheduler_utils  # noqa: E402
from placement import db_api as placement_db  # noqa: E402

from opie.core import resources as res  # noqa: E402
from opie.nova import manager as opie_manager  # noqa: E402
from opie.nova.request import instance_cache  # noqa: E402
from opie.testing import cloud  # noqa: E402
from opie.testing import harness  # noqa: E402

NOVA_WEIGHERS = ['nova.scheduler.weights.all_weighers']
# Stock Nova's [filter_scheduler].
STOCK = {'enabled_filters': harness.NOVA_FILTERS,
         'weight_classes': NOVA_WEIGHERS}
NODE = res.Resources(32, 65536, 2000)
# Preemptibles per node: (flavor, count), every vCPU taken.
FILL = (('small', 12), ('medium', 6), ('large', 2))
HOURS = 10
# Nodes saturated between two collections of the building's garbage.
SETTLE_NODES = 250
CONF = nova.conf.CONF
ARGS = argparse.Namespace(nodes=[10, 100, 1000], iterations=10, seed=1,
                          collect_between=False, no_freeze=False,
                          twin=False, twin_of=None)
# How the twin's answers start on its standard output.
TWIN = 'twin: '


class ScaleDriver(harness.PaperDriver):
    vcpus, memory_mb, local_gb = NODE


class Counter:
    """SQL statements per database and the scheduler's Placement
    requests, since the last :meth:`reset`."""

    def __init__(self):
        self.statements = collections.Counter()
        self.placement = []
        event.listen(sqla_engine.Engine, 'before_cursor_execute',
                     self._statement)

        # Seconds Python's collector ran since the reset, and its full
        # collections.
        self.collecting = 0.0
        self.full = 0
        self._collection = None
        gc.callbacks.append(self._collected)

    def close(self):
        event.remove(sqla_engine.Engine, 'before_cursor_execute',
                     self._statement)
        gc.callbacks.remove(self._collected)

    def reset(self):
        self.statements.clear()
        del self.placement[:]
        self.collecting = 0.0
        self.full = 0

    def _collected(self, phase, info):
        if phase == 'start':
            self._collection = time.perf_counter()
        elif self._collection is not None:
            self.collecting += time.perf_counter() - self._collection
            self.full += info['generation'] == 2

    def _statement(self, conn, cursor, statement, *args):
        if conn.engine is placement_db.get_placement_engine():
            self.statements['placement'] += 1
        elif conn.engine is api_db.get_engine():
            self.statements['nova api'] += 1
        else:
            self.statements['nova cell'] += 1

    def nova_queries(self):
        return self.statements['nova api'] + self.statements['nova cell']


class ScaleCloud(cloud.OpieCloud):
    CAST_AS_CALL = False
    HOSTS = ('scale',)
    DRIVER = ScaleDriver

    def _setup_services(self):
        # Background work would run inside the calls timed and counted:
        # the compute's periodic tasks (its resource audit of 1000 nodes)
        # and every service's heartbeat (kept up for the whole run).
        self.flags(periodic_enable=False, report_interval=3600,
                   service_down_time=7200)
        super()._setup_services()

    def runTest(self):
        # Built while this cloud is, and idle until asked.
        self.twin = None
        if ARGS.twin:
            self.twin = Twin(self.NODES)
            self.addCleanup(self.twin.close)
        self.flags(freeze_after_warm_up=not ARGS.no_freeze, group='opie')
        self.context = nova_context.get_admin_context()
        self.opie = self.scheduler.manager
        # Before the nodes: a boot on a 1000-node compute service takes
        # longer than Nova's test helpers wait.
        self.spec = self.request_spec('medium')
        with _building():
            self.nodes = self.add_nodes(self.NODES)
        # OPIE's filters and weighers, for OPIE's restarts; stock's from
        # now on.
        self.opie_flags = {name: getattr(CONF.filter_scheduler, name)
                           for name in STOCK}
        self.flags(group='filter_scheduler', **STOCK)
        assert self.opie.host_manager._instance_info['scale']['updated']
        self.stock = self.started(nova_manager.SchedulerManager)
        self.counter = Counter()
        self.addCleanup(self.counter.close)
        self.count_placement_calls(self.counter.placement)
        result = RESULTS[self.NODES] = {}
        empty = {'stock, empty': self.stock, 'OPIE, empty': self.opie}
        if self.twin is not None:
            self.twin.ready()
            empty[Twin.EMPTY] = self.twin
        result.update(self.measure(empty))
        result.update(self.first_calls(
            'stock, restarted',
            lambda: self.started(nova_manager.SchedulerManager),
            twin_case=Twin.STOCK_RESTARTS))
        self.held = {}
        with _building():
            self.saturate()
        self.preempted = []
        self.stub_out_terminations(self.opie)
        saturated = {'stock, saturated': self.stock,
                     'OPIE, saturated': self.opie}
        if self.twin is not None:
            saturated[Twin.SATURATED] = self.twin
        result.update(self.measure(
            saturated, restore={'OPIE, saturated'},
            settle=lambda: self.opie._opie_warm_up(None)))
        result.update(self.first_calls(
            'OPIE, restarted', self.restarted_opie, restore=True,
            twin_case=Twin.OPIE_RESTARTS))
        result['kept'] = self.kept_memory()
        result['rss'] = resource.getrusage(
            resource.RUSAGE_SELF).ru_maxrss * 1024

    # the cloud -----------------------------------------------------------
    def add_nodes(self, count):
        """The compute service's nodes: ``count`` of them; their provider
        uuids."""
        compute = self.computes['scale']
        # The service's first node keeps its name: Nova does not delete it.
        names = {'scale'} | {'scale-%04d' % i for i in range(1, count)}
        compute.driver._set_nodes(sorted(names))
        compute.manager.update_available_resource(self.context)
        uuids = [rp['uuid'] for rp in self.placement.get(
            '/resource_providers', version='1.14').body['resource_providers']
            if rp['name'] in names]
        assert len(uuids) == count, (len(uuids), count)
        return uuids

    def saturate(self):
        """Every node full of preemptibles of mixed sizes and ages."""
        rng = random.Random(ARGS.seed)
        now = timeutils.utcnow()
        flavors = {name: objects.Flavor.get_by_flavor_id(
            self.context, self.preemptible[name]) for name, _ in FILL}
        mapping = objects.CellMappingList.get_all(self.context)[1]
        # Nova memoizes each instance's EC2 id in oslo.cache's in-memory
        # backend, which scans every entry on each write: quadratic over
        # 20 N instances (hours at 5000 nodes), and nothing reads them.
        with nova_context.target_cell(self.context, mapping) as cctxt, \
                mock.patch('nova.objects.ec2._CACHE', _NO_CACHE):
            for i, node_uuid in enumerate(self.nodes, 1):
                if not i % SETTLE_NODES:
                    _settle()
                node = objects.ComputeNode.get_by_uuid(cctxt, node_uuid)
                allocations = {}
                for name, count in FILL:
                    for _ in range(count):
                        launched = now - datetime.timedelta(
                            seconds=rng.uniform(60, HOURS * 3600))
                        uuid = _instance(cctxt, node, flavors[name],
                                         launched)
                        allocations[uuid] = _allocation(
                            node_uuid, flavors[name])
                response = self.placement.post(
                    '/allocations', allocations, version='1.28')
                assert response.status == 204, response.body
                self.held.update(allocations)

    def stub_out_terminations(self, manager):
        """Victims are recorded, not terminated (see the docstring)."""
        def record(preemptions, info):
            self.preempted.extend(preemptions)
        manager.terminator.terminate_later = record

    # restarts ------------------------------------------------------------
    def started(self, manager_class, flags=None):
        """A new scheduler manager of ``manager_class``, as a process just
        started with ``[filter_scheduler]`` ``flags`` (stock's if None)
        has it.

        Not an RPC service, it hears none of the compute's instance
        updates: it shares those the OPIE scheduler service hears, as a
        scheduler service would hear them itself (else it reads each
        node's instances from the database on every request), and does
        not read them all at start."""
        self.flags(group='filter_scheduler', **(flags or STOCK))
        try:
            with mock.patch.object(host_manager.HostManager,
                                   '_init_instance_info'):
                manager = manager_class()
        finally:
            self.flags(group='filter_scheduler', **STOCK)
        manager.host_manager._instance_info = (
            self.opie.host_manager._instance_info)
        return manager

    def restarted_opie(self):
        """A new OPIE manager, warmed before it serves; the warm-up's
        time and counts kept in ``self.warm_ups``."""
        manager = self.started(opie_manager.OpieSchedulerManager,
                               self.opie_flags)
        self.stub_out_terminations(manager)
        self.counter.reset()
        started = time.perf_counter()
        manager.pre_start_hook(None)
        self.warm_ups.append((time.perf_counter() - started,
                              self.counter.nova_queries()))
        assert not manager.cold, 'the warm-up failed'
        return manager

    def first_calls(self, name, restart, restore=False, twin_case=None):
        """{``name``: a Case of the first call of ``ARGS.iterations``
        managers just (re)started by ``restart()``, each once}; with a
        twin, ``twin_case`` too: the twin's calls, interleaved."""
        cases = {name: Case()}
        self.warm_ups = cases[name].warm_ups = []
        beside = self.twin is not None and twin_case is not None
        if beside:
            cases[twin_case] = Case()
        for _ in range(ARGS.iterations):
            if beside:
                cases[twin_case].add(*self.twin.ask())
            # The managers before are garbage, which a restarted process
            # does not hold: collected, untimed.
            gc.collect()
            cases[name].add(*self.select(restart(), restore))
        return cases

    def kept_memory(self):
        """Bytes a warmed worker keeps: a new instance cache warmed as
        before serving, every node's preemptibles read."""
        self.opie.instances = instance_cache.InstanceCache()
        gc.collect()
        tracemalloc.start()
        self.opie.pre_start_hook(None)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        return kept

    # timing --------------------------------------------------------------
    def measure(self, managers, restore=(), settle=None):
        """{case: Case} for each (case, manager); calls interleaved, the
        first round (caches warming) not kept, ``settle()`` called after
        it, untimed; the victims of the cases named in ``restore`` given
        back after each call."""
        cases = {name: Case() for name in managers}
        for i in range(ARGS.iterations + 1):
            for name, manager in managers.items():
                if isinstance(manager, Twin):
                    elapsed, counts = manager.ask()
                else:
                    elapsed, counts = self.select(manager, name in restore)
                if i:
                    cases[name].add(elapsed, counts)
                else:
                    cases[name].cold = elapsed, counts
            if not i and settle is not None:
                settle()
        for name, manager in managers.items():
            if isinstance(manager, Twin):
                continue        # its memory is its own process's
            tracemalloc.start()
            self.select(manager, name in restore)
            cases[name].peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        return cases

    def select(self, manager, restore):
        """One timed select_destinations; its elapsed time and counts."""
        spec = copy.deepcopy(self.spec)
        spec.instance_uuid = uuidutils.generate_uuid()
        if ARGS.collect_between:
            gc.collect()
        self.counter.reset()
        started = time.perf_counter()
        manager.select_destinations(
            self.context, spec_obj=spec, instance_uuids=[spec.instance_uuid],
            return_objects=True, return_alternates=True)
        elapsed = time.perf_counter() - started
        counts = (self.counter.nova_queries(),
                  dict(self.counter.statements), list(self.counter.placement),
                  (self.counter.collecting, self.counter.full))
        manager.placement_client.delete_allocation_for_instance(
            self.context, spec.instance_uuid, force=True)
        if restore:
            self.restore()
        return elapsed, counts

    def restore(self):
        """The victims of the last call hold their room again."""
        victims = [victim.uuid for preemption in self.preempted
                   for victim in preemption.victims]
        assert victims, 'the saturated cloud had room'
        del self.preempted[:]
        response = self.placement.post('/allocations', {
            uuid: dict(self.held[uuid], consumer_generation=None)
            for uuid in victims}, version='1.28')
        assert response.status == 204, response.body


class Case:
    def __init__(self):
        self.samples = []
        # (seconds the collector ran, full collections) within each sample.
        self.collecting = []
        self.counts = None
        self.cold = None
        self.peak = None
        self.warm_ups = None

    def add(self, elapsed, counts):
        """One timed call: its seconds and counts (as ``select``
        returns them)."""
        self.samples.append(elapsed)
        self.collecting.append(counts[3])
        self.counts = counts

    @property
    def median(self):
        return statistics.median(self.samples)


class Twin:
    """Stock Nova on an empty cloud of the same nodes, in a process of
    its own, one call timed there when asked: a meter of the machine's
    speed in each phase (see the module docstring). The twin builds its
    cloud while this process builds its own, and waits on its standard
    input while this one runs."""
    # Its cases: the phases it is timed beside.
    EMPTY = 'twin: empty cloud'
    STOCK_RESTARTS = "twin: stock's restarts"
    SATURATED = 'twin: saturated'
    OPIE_RESTARTS = "twin: OPIE's restarts"

    def __init__(self, nodes):
        self.log = tempfile.TemporaryFile('w+')
        # Its calls are made as this process's are.
        flags = [flag for flag, on in (
            ('--collect-between', ARGS.collect_between),
            ('--no-freeze', ARGS.no_freeze)) if on]
        self.process = subprocess.Popen(
            [sys.executable, __file__, '--twin-of', str(nodes),
             '--seed', str(ARGS.seed)] + flags,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
            text=True, bufsize=1)

    def ready(self):
        """Wait until the twin's cloud is built (nothing is timed while
        it builds)."""
        self._answer()

    def ask(self):
        """Stock's call on the twin's cloud, timed there: (seconds,
        counts) as :meth:`ScaleCloud.select` returns them."""
        try:
            self.process.stdin.write('call\n')
            self.process.stdin.flush()
        except BrokenPipeError:
            pass        # it ended: _answer says how
        elapsed, counts = self._answer()
        return elapsed, tuple(counts)

    def _answer(self):
        for line in self.process.stdout:
            if line.startswith(TWIN):
                return json.loads(line[len(TWIN):])
        self.process.wait()
        self.log.seek(0)
        raise RuntimeError('the twin process ended (status %s): %s' % (
            self.process.returncode, self.log.read()[-3000:]))

    def close(self):
        try:
            self.process.stdin.close()
        except BrokenPipeError:
            pass
        self.process.wait()
        self.log.close()


class TwinCloud(ScaleCloud):
    """The twin's side (:class:`Twin`): the empty cloud and stock's
    scheduler, one timed call per line read."""

    def runTest(self):
        self.context = nova_context.get_admin_context()
        self.opie = self.scheduler.manager
        self.spec = self.request_spec('medium')
        with _building():
            self.nodes = self.add_nodes(self.NODES)
        self.flags(group='filter_scheduler', **STOCK)
        self.stock = self.started(nova_manager.SchedulerManager)
        self.counter = Counter()
        self.addCleanup(self.counter.close)
        self.count_placement_calls(self.counter.placement)
        # To the pipe, whatever the test case captures (OS_STDOUT_CAPTURE).
        print(TWIN + json.dumps('ready'), file=sys.__stdout__, flush=True)
        for _ in sys.stdin:
            print(TWIN + json.dumps(self.select(self.stock, False)),
                  file=sys.__stdout__, flush=True)


def _instance(context, node, flavor, launched_at):
    """A preemptible instance of ``flavor`` running on ``node`` since
    ``launched_at``, as the cell database has it; its uuid."""
    instance = objects.Instance(
        context, uuid=uuidutils.generate_uuid(), project_id='tenant',
        user_id='tenant', host=node.host, node=node.hypervisor_hostname,
        compute_id=node.id, flavor=flavor, instance_type_id=flavor.id,
        vcpus=flavor.vcpus, memory_mb=flavor.memory_mb,
        root_gb=flavor.root_gb, ephemeral_gb=flavor.ephemeral_gb,
        vm_state=vm_states.ACTIVE, power_state=power_state.RUNNING,
        task_state=None, launched_at=launched_at, created_at=launched_at,
        locked=False, old_flavor=None, new_flavor=None)
    instance.create()
    return instance.uuid


def _allocation(node_uuid, flavor):
    """The Placement allocation Nova writes for ``flavor`` on a node."""
    return {'allocations': {node_uuid: {
                'resources': scheduler_utils.resources_from_flavor_and_bfv(
                    flavor, False)}},
            'project_id': 'tenant', 'user_id': 'tenant',
            'consumer_generation': None}


class _NoCache:
    """A cache that keeps nothing (nova.objects.ec2's memoizer)."""

    def get(self, key):
        return None

    def set(self, key, value):
        pass


_NO_CACHE = _NoCache()


@contextlib.contextmanager
def _building():
    """The cloud is built without the collector (each full collection
    scans the growing cloud: quadratic over thousands of nodes); what
    exists then is the cloud's, and out of the collector's reach (see the
    module docstring)."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        _settle()


def _settle():
    """The cloud's garbage so far collected, the rest frozen: without it
    the saturation of 5000 nodes held 16 GB. Collected again after, so
    that the full collections of the calls fall due as in a process
    without the cloud (see opie.nova.manager.settle_garbage)."""
    gc.collect()
    gc.freeze()
    gc.collect()


RESULTS = {}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--nodes', type=int, nargs='+',
                        default=ARGS.nodes)
    parser.add_argument('--iterations', type=int, default=ARGS.iterations)
    parser.add_argument('--seed', type=int, default=ARGS.seed)
    parser.add_argument(
        '--collect-between', action='store_true',
        help='collect the garbage, untimed, before each timed call of '
             'every case: each call then pays only for the collections '
             'its own objects cause, not for the garbage of the calls '
             '(and of the saturated case\'s restores) before it')
    parser.add_argument(
        '--no-freeze', action='store_true',
        help="OPIE's warm-ups collect their garbage but freeze nothing "
             "([opie] freeze_after_warm_up = False)")
    parser.add_argument(
        '--no-twin', dest='twin', action='store_false',
        help="start no twin process to meter the machine's speed in "
             "each phase: no ratio is corrected for drift")
    parser.add_argument('--twin-of', type=int, help=argparse.SUPPRESS)
    ARGS.twin = True
    parser.parse_args(namespace=ARGS)
    if min(ARGS.nodes) < 1 or ARGS.iterations < 1:
        parser.error('--nodes and --iterations must be at least 1')
    if ARGS.twin_of is not None:
        return 0 if cloud.run_quietly([type(
            'TwinCloud%d' % ARGS.twin_of, (TwinCloud,),
            {'NODES': ARGS.twin_of})()]) else 1
    passed = cloud.run_quietly(
        [type('ScaleCloud%d' % n, (ScaleCloud,), {'NODES': n})()
         for n in ARGS.nodes])
    # A cloud that failed only when torn down (a run of more than an hour
    # at 5000 nodes) measured every case: its rows are printed all the
    # same. Those of a cloud that failed before its last case are not.
    for nodes in [n for n, cases in RESULTS.items() if 'rss' not in cases]:
        del RESULTS[nodes]
    if RESULTS:
        report()
    return 0 if passed else 1


def report():
    print('In-process Nova 34 + Placement, one compute service, nodes of '
          '%s; %d timed calls per case (ratio: of the medians)%s'
          % (NODE, ARGS.iterations, ''.join(
              note for note, on in (
                  ('; garbage collected untimed before each call',
                   ARGS.collect_between),
                  ("; OPIE's warm-ups freeze nothing", ARGS.no_freeze))
              if on)))
    print('%6s  %-22s %9s %6s %9s %6s %7s %8s %8s %9s %9s' % (
        'nodes', 'case', 'median', 'ratio', 'mean', 'gc ms', 'full gc',
        'nova SQL', 'plc SQL', 'plc calls', 'peak MB'))
    for nodes, cases in RESULTS.items():
        stock = cases['stock, empty'].median
        for name, case in cases.items():
            if name in ('rss', 'kept'):
                continue
            queries, statements, calls, _ = case.counts
            row = (nodes, name, case.median * 1000, case.median / stock,
                   statistics.mean(case.samples) * 1000,
                   statistics.median(t for t, _ in case.collecting) * 1000,
                   statistics.mean(n for _, n in case.collecting), queries,
                   statements.get('placement', 0), len(calls),
                   '-' if case.peak is None else '%.1f' % (
                       case.peak / 2 ** 20))
            print('%6d  %-22s %7.1f ms %6.2f %6.1f ms %6.0f %7.1f %8d %8d '
                  '%9d %9s' % row)
        elapsed, (queries, _, _, _) = cases['OPIE, saturated'].cold
        print('%6d  OPIE, saturated, first call (instances read and '
              'kept): %.1f ms, %d nova SQL' % (nodes, elapsed * 1000,
                                               queries))
        print('%6d  saturated cloud, interleaved: OPIE %.1f ms / stock '
              '%.1f ms = %.2f' % (
                  nodes, cases['OPIE, saturated'].median * 1000,
                  cases['stock, saturated'].median * 1000,
                  cases['OPIE, saturated'].median
                  / cases['stock, saturated'].median))
        first = cases['OPIE, restarted']
        print('%6d  first call after a restart: OPIE (saturated, warmed) '
              '%.1f ms / stock (empty) %.1f ms = %.2f' % (
                  nodes, first.median * 1000,
                  cases['stock, restarted'].median * 1000,
                  first.median / cases['stock, restarted'].median))
        if Twin.EMPTY in cases:
            _report_drift(nodes, cases)
        print('%6d  OPIE warm-up before serving (pre_start_hook, untimed '
              'above): %.1f ms, %d nova SQL' % (
                  nodes, statistics.median(t for t, _ in first.warm_ups)
                  * 1000, first.warm_ups[-1][1]))
        print('%6d  kept by a warmed worker (the instance cache of every '
              'node): %.1f MB' % (nodes, cases['kept'] / 2 ** 20))
        print('%6d  process resident memory (peak): %.0f MB' % (
            nodes, cases['rss'] / 2 ** 20))
    calls = cases['OPIE, saturated'].counts[2]
    print('Placement requests of the last saturated call: %s'
          % ', '.join(calls))
    print('Goals at 1000 nodes: OPIE/stock <= 1.1 empty, <= 1.3 saturated; '
          'at 5000, <= 1.5 saturated; first call after a restart <= 2.0 x '
          'stock\'s; nova SQL of OPIE constant in N.')


def _report_drift(nodes, cases):
    """The saturated and restart ratios corrected for drift, as the twin
    measured it."""
    for label, opie, stock, early, late in (
            ('saturated cloud', 'OPIE, saturated', 'stock, empty',
             Twin.EMPTY, Twin.SATURATED),
            ('first call after a restart', 'OPIE, restarted',
             'stock, restarted', Twin.STOCK_RESTARTS, Twin.OPIE_RESTARTS)):
        drift = cases[late].median / cases[early].median
        print('%6d  %s, corrected for drift: OPIE %.1f ms / (stock %.1f ms '
              'x the twin %.1f / %.1f ms = %.2f) = %.2f' % (
                  nodes, label, cases[opie].median * 1000,
                  cases[stock].median * 1000, cases[late].median * 1000,
                  cases[early].median * 1000, drift,
                  cases[opie].median / (cases[stock].median * drift)))


if __name__ == '__main__':
    sys.exit(main())
