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

"""How often the instance cache reads the database.

It does not read a node in full on every request where Placement
legitimately counts more preemptible usage than the instances listed
there (found by an adversarial review): a preemptible's resize left
unconfirmed (its migration holds the source), a flavor marked
preemptible that OPIE counts as normal.

A scheduler worker just started reads every node before it serves
(issue 28): its first preempting request reads no node in full and runs
as many SQL statements on the cell database as its later ones (a full
read is one statement too, of every row: both must hold). A database
down then leaves it serving cold, as before, and warming later; a
request served half-way through the warm-up decides as on a fresh read.
"""
import contextlib
import gc
import threading
import weakref

from oslo_db import exception as db_exc
from sqlalchemy import engine as sqla_engine
from sqlalchemy import event

from nova import context as nova_context
from nova.db.api import api as api_db
from placement import db_api as placement_db

from opie.nova.request import host_records
from opie.nova.request import instance_cache
from opie.testing import cloud

from tests.functional import test_preemption


def full_reads_of_host_a(test):
    """Three normal boots, each preempting: for each, the full reads of
    host-A it made. The first may read host-A in full; later ones catch
    up from the cache."""
    reads = []
    real = host_records.InstanceLoader._read

    def spy(loader, cell_uuid, hosts=None, since=None):
        reads.append(tuple(hosts or ()))
        return real(loader, cell_uuid, hosts=hosts, since=since)
    test.stub_out('opie.nova.request.host_records.InstanceLoader._read', spy)
    per_request = []
    for i in range(3):
        del reads[:]
        test.boot('medium', 'N%d' % i)
        test.wait_for_terminations()
        per_request.append([h for h in reads if 'host-A' in h])
    return per_request


class UnconfirmedResize(cloud.OpieCloud):
    HOSTS = ('host-A', 'host-B')

    def test_unconfirmed_resize_source_read_in_full_on_every_request(self):
        member = self.api_fixture.api
        # R: a preemptible small on host-A, resized by its owner to a
        # preemptible medium (host-B) and never confirmed.
        resized = self.boot('small', 'R', host='host-A', preemptible=True)
        member.post_server_action(resized['id'], {'resize': {
            'flavorRef': self.preemptible['medium']}})
        self._wait_for_state_change(resized, 'VERIFY_RESIZE')
        self.assertEqual('host-B', self.host_of(resized))
        # Launched 59 minutes ago: the dearest victim, never chosen.
        self.set_launched_at(resized['id'], 59)
        for i in range(3):
            self.boot('medium', 'PA%d' % i, host='host-A', preemptible=True,
                      minutes=10 + i)
            self.boot('medium', 'PB%d' % i, host='host-B', preemptible=True,
                      minutes=40 + i)
        per_request = full_reads_of_host_a(self)
        self.assertIn('R', self.live_names())
        self.assertEqual([], per_request[1] + per_request[2], per_request)


class OddPreemptibleFlavor(cloud.OpieCloud):
    HOSTS = ('host-A', 'host-B')

    def test_marked_flavor_with_odd_override_read_in_full_every_request(self):
        # An operator's flavor marked preemptible whose disk override is
        # wrong: OPIE treats it as normal (one warning), yet Placement
        # charges its servers to the CUSTOM_PREEMPTIBLE_* classes.
        specs = cloud.preemptible_specs(2, 4000, 40)
        specs['resources:CUSTOM_PREEMPTIBLE_DISK_GB'] = '1'
        odd = self._create_flavor(name='odd', vcpu=2, memory_mb=4000,
                                  disk=40, ephemeral=0, extra_spec=specs)
        self._create_server(name='odd', flavor_id=odd, networks='none',
                            host='host-A')
        for i in range(3):
            self.boot('medium', 'PA%d' % i, host='host-A', preemptible=True,
                      minutes=10 + i)
            self.boot('medium', 'PB%d' % i, host='host-B', preemptible=True,
                      minutes=40 + i)
        self.boot('medium', 'PB3', host='host-B', preemptible=True,
                  minutes=50)
        per_request = full_reads_of_host_a(self)
        self.assertEqual([], per_request[1] + per_request[2], per_request)


@contextlib.contextmanager
def counting_cell_statements(counts):
    """Add to ``counts[-1]`` each SQL statement this thread runs on a cell
    database inside: not those of the computes' periodic tasks, which run
    meanwhile when their time comes."""
    owner = threading.get_ident()

    def statement(conn, *args):
        if threading.get_ident() == owner and conn.engine not in (
                api_db.get_engine(), placement_db.get_placement_engine()):
            counts[-1] += 1
    event.listen(sqla_engine.Engine, 'before_cursor_execute', statement)
    try:
        yield
    finally:
        event.remove(sqla_engine.Engine, 'before_cursor_execute', statement)


class WarmStart(cloud.OpieCloud):
    """A scheduler worker started (or restarted) on a cloud full of
    preemptibles: Nova calls pre_start_hook before its RPC server
    consumes."""

    def setUp(self):
        super().setUp()
        # A worker whose process nothing froze before its first warm-up
        # (the suite freezes what it collected: tests/functional/conftest).
        self.stub_out('opie.nova.manager._FROZEN_BEFORE', False)
        test_preemption.fill_with_preemptibles(self)
        self.worker = self.other_worker()
        self.counts = []
        real = self.worker.select_destinations

        def counted(*args, **kwargs):
            self.counts.append(0)
            with counting_cell_statements(self.counts):
                return real(*args, **kwargs)
        self.worker.select_destinations = counted

    def boots(self, count):
        """Normal boots served by the worker, each preempting: the hosts
        of each full read each made."""
        full_reads = self.spy_full_reads()
        per_request = []
        with self.served_by(self.worker):
            for i in range(count):
                del full_reads[:]
                self.boot('medium', 'N%d' % len(self.counts))
                self.wait_for_terminations()
                per_request.append(list(full_reads))
        return per_request

    def test_first_preempting_request_runs_as_many_statements_as_later(self):
        # What a worker learns on its first claim on each host, apart
        # from this: the host token's generation (read from Placement,
        # then the host's instances caught up: one statement more).
        ctxt = nova_context.get_admin_context()
        for host in ('host-A', 'host-B'):
            uuid = self._get_provider_uuid_by_host(host)
            self.worker.tokens.learn(uuid, host_records.read_host(
                self.worker.placement_client, ctxt, uuid)[0])
        self.worker.pre_start_hook(None)
        full_reads = self.boots(4)
        self.assertEqual(4, len(self.victim_uuids()))
        self.assertEqual([[]] * 4, full_reads)
        self.assertEqual([self.counts[-1]] * 4, self.counts)

    def test_the_warm_up_leaves_its_garbage_collected(self):
        # What the warm-up left young is collected before the worker
        # serves: its first requests pay no full collection of it.
        events = []
        real = instance_cache.InstanceCache.preemptibles

        def preemptibles(cache, *args, **kwargs):
            events.append('read')
            return real(cache, *args, **kwargs)
        self.stub_out(
            'opie.nova.request.instance_cache.InstanceCache.preemptibles',
            preemptibles)

        def collected(phase, info):
            if phase == 'stop' and info['generation'] == 2:
                events.append('full collection')
        gc.callbacks.append(collected)
        self.addCleanup(gc.callbacks.remove, collected)
        self.worker.pre_start_hook(None)
        self.assertIn('read', events)
        self.assertEqual('full collection', events[-1])

    def test_what_a_warm_up_keeps_is_out_of_the_collectors_reach(self):
        # The cache's instances would be scanned by every full collection
        # in a request: a warm-up freezes them.
        self.worker.pre_start_hook(None)
        kept = self.kept()
        self.assertTrue(kept)
        scanned = {id(o) for o in gc.get_objects()}
        self.assertEqual([], [i.uuid for i in kept if id(i) in scanned])

    def test_a_cycle_frozen_by_a_warm_up_is_collected_by_the_next(self):
        cycle = _Cycle()
        alive = weakref.ref(cycle)
        self.worker.pre_start_hook(None)
        del cycle
        gc.collect()
        # Frozen: Python's own collections leave it...
        self.assertIsNotNone(alive())
        # ...and the next warm-up takes it back and collects it.
        self.worker._opie_warm_up(None)
        self.assertIsNone(alive())

    def test_a_failed_warm_up_collects_and_freezes_all_the_same(self):
        cycle = _Cycle()
        alive = weakref.ref(cycle)
        self.worker.pre_start_hook(None)
        del cycle
        self.spy_full_reads([db_exc.DBConnectionError('cell database down')])
        self.worker.instances = instance_cache.InstanceCache()
        self.worker._opie_warm_up(None)
        self.assertTrue(self.worker.cold)
        self.assertIsNone(alive())
        self.assertGreater(gc.get_freeze_count(), 0)

    def test_without_freezing_nothing_is_frozen_or_taken_back(self):
        self.flags(freeze_after_warm_up=False, group='opie')
        self.assert_freeze_left_alone()

    def test_what_a_launcher_froze_before_the_first_warm_up_stays_so(self):
        # oslo.service's eventlet launcher freezes the parent's objects
        # before it forks workers: taken back and collected, each worker
        # would write to every page it shares with the others.
        self.stub_out('opie.nova.manager._FROZEN_BEFORE', None)
        self.assert_freeze_left_alone()

    def assert_freeze_left_alone(self):
        """A warm-up leaves what was frozen before it frozen and freezes
        nothing more: the cache is scanned as anything else."""
        frozen = _Cycle()
        gc.freeze()
        self.worker.pre_start_hook(None)
        scanned = {id(o) for o in gc.get_objects()}
        self.assertNotIn(id(frozen), scanned)
        kept = self.kept()
        self.assertTrue(kept)
        self.assertEqual([], [i.uuid for i in kept if id(i) not in scanned])

    def kept(self):
        """The core Instances the worker's cache keeps."""
        return [instance for node in self.worker.instances._nodes.values()
                for instance in node.values()]

    def spy_full_reads(self, failures=()):
        """Hosts of each full read the worker makes, from now; the first
        ``failures`` raised instead of reading."""
        real = host_records.InstanceLoader._read
        failures = list(failures)
        full_reads = []

        def read(loader, cell_uuid, hosts=None, since=None):
            if hosts is not None:
                full_reads.append(hosts)
                if failures:
                    raise failures.pop()
            return real(loader, cell_uuid, hosts, since)
        self.stub_out(
            'opie.nova.request.host_records.InstanceLoader._read', read)
        return full_reads

    def test_a_database_down_during_warm_up_leaves_the_worker_serving(self):
        b2 = self.server('B-2')['id']
        self.spy_full_reads([db_exc.DBConnectionError('cell database down')
                             for _ in range(2)])
        # Started on a database down: it starts all the same, cold.
        self.worker.pre_start_hook(None)
        self.assertEqual({}, self.worker.instances._nodes)
        # The periodic warm-up fails again: the failure was logged once.
        self.worker._opie_warm_up(None)
        self.assertEqual({}, self.worker.instances._nodes)
        log = self.stdlog.logger.output
        self.assertEqual(1, log.count('serving cold'), log)
        # The next one warms it: the first request reads nothing in full.
        self.worker._opie_warm_up(None)
        self.assertIn('now warm', self.stdlog.logger.output)
        self.assertEqual([[]], self.boots(1))
        self.assertEqual([b2], self.victim_uuids())

    def test_a_cold_worker_serves_during_a_database_outage_at_start(self):
        # Cold, as before warm-ups: its first request reads what it
        # needs, itself.
        b2 = self.server('B-2')['id']
        self.spy_full_reads([db_exc.DBConnectionError('cell database down')])
        self.worker.pre_start_hook(None)
        self.boots(1)
        self.assertEqual([b2], self.victim_uuids())

    def test_a_request_served_half_way_through_the_warm_up(self):
        # One host at a time: the warm-up keeps host-A, a request is
        # served (it reads host-B itself), a lock is set on host-B, the
        # warm-up goes on: host-B, kept by the request, is not read again
        # and the lock is seen as every request's change is.
        self.stub_out('opie.nova.request.instance_cache.WARM_BATCH', 1)
        real = instance_cache.InstanceCache.preemptibles
        b2, b3, a0 = (self.server(n)['id'] for n in ('B-2', 'B-3', 'A-0'))
        served = []

        def between(cache, read, cell_uuid, nodes, fresh=()):
            found = real(cache, read, cell_uuid, nodes, fresh)
            if [n[0] for n in nodes] == ['host-A'] and not served:
                served.append(set(cache._nodes))
                self.boots(1)
                self.lock_as_operator(b3)
            return found
        self.stub_out(
            'opie.nova.request.instance_cache.InstanceCache.preemptibles',
            between)
        self.worker.pre_start_hook(None)
        self.assertEqual(1, len(served[0]), served)
        self.assertEqual([b2], self.victim_uuids())
        # B-3 (20) would be next; locked, A-0 (31) beats B-1 (40).
        with self.served_by(self.worker):
            self.boot('medium', 'next')
            self.wait_for_terminations()
        self.assertEqual([b2, a0], self.victim_uuids())
        self.assert_within_capacity()


class _Cycle:
    """Garbage only the collector frees: it refers to itself."""

    def __init__(self):
        self.me = self
