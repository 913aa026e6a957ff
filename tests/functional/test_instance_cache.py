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

"""The scheduler's instance cache never hides a change from a request.

A first normal boot makes the scheduler read (and keep) both hosts'
preemptibles; between it and the next boot each test changes what a
fresh read would give: a lock an operator sets, a new preemptible, a save
whose time lies before the cache's last query, a deleted row archived
unseen. The next boot must decide as on a fresh read; a lock, a deletion
or a soft deletion saved by a clock far behind must still protect (the
victim's row is read again before the write). A failed first read hides
nothing.
"""
import datetime

from oslo_db import exception as db_exc
from oslo_utils import timeutils

from nova.compute import vm_states
from nova import context as nova_context
from nova.db.main import api as db_api
from nova import objects

from opie.nova.request import host_records
from opie.nova.request import instance_cache
from opie.testing import cloud

from tests.functional import test_preemption


def save(uuid, **fields):
    """Save an instance with ``fields`` changed; its cell's uuid."""
    ctxt = nova_context.get_admin_context()
    mapping = objects.InstanceMapping.get_by_instance_uuid(ctxt, uuid)
    with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
        instance = objects.Instance.get_by_uuid(cctxt, uuid)
        for field, value in fields.items():
            setattr(instance, field, value)
        instance.save()
    return mapping.cell_mapping.uuid


class InstanceCache(cloud.OpieCloud):

    def setUp(self):
        super().setUp()
        test_preemption.fill_with_preemptibles(self)
        # B-2 (5 minutes) goes; both hosts' preemptibles are now kept.
        b2 = self.server_id('B-2')
        self.first = self.boot('medium', 'first')
        self.wait_for_terminations()
        self.assertEqual([b2], self.victim_uuids())

    def server_id(self, name):
        return self.server(name)['id']

    def save(self, name, **fields):
        return save(self.server_id(name), **fields)

    def assert_next_victim(self, name):
        expected = self.server_id(name)
        self.boot('medium', 'next')
        self.wait_for_terminations()
        self.assertEqual(expected, self.victim_uuids()[-1])
        self.assert_within_capacity()

    def test_an_operator_lock_set_after_the_read_protects(self):
        # B-3 (20) would be next; locked, A-0 (31) beats B-1 (40).
        self.lock_as_operator(
            self.server_id('B-3'))
        self.assert_next_victim('A-0')

    def test_a_preemptible_booted_after_the_read_is_seen(self):
        self._delete_server(self.first)
        self._wait_until_deleted(self.first)
        self.boot('medium', 'fresh', host='host-B', preemptible=True,
                  minutes=0)
        self.assert_next_victim('fresh')

    def fresh_preemptible_on_host_b(self):
        """Room on host-B for a new preemptible 'fresh', the cheapest."""
        self._delete_server(self.first)
        self._wait_until_deleted(self.first)
        return self.boot('medium', 'fresh', host='host-B', preemptible=True,
                         minutes=0)

    def catch_up(self):
        """What a request does first: bring the kept lists up to date."""
        ctxt = nova_context.get_admin_context()
        manager = self.scheduler.manager
        loader = host_records.InstanceLoader(ctxt, manager.host_manager.cells,
                                             None, manager.instances)
        for cell_uuid in manager.host_manager.cells:
            manager.instances.preemptibles(loader._read, cell_uuid, [])

    def check_scheduler_clock_off_by(self, seconds):
        manager = self.scheduler.manager
        manager.instances._clock = lambda: timeutils.utcnow() + \
            datetime.timedelta(seconds=seconds)
        # A request at the scheduler's time: its query of changes begins.
        self.catch_up()
        self.fresh_preemptible_on_host_b()
        self.assert_next_victim('fresh')

    def test_a_scheduler_clock_120_s_ahead_misses_no_preemptible(self):
        self.check_scheduler_clock_off_by(120)

    def test_a_scheduler_clock_120_s_behind_misses_no_preemptible(self):
        self.check_scheduler_clock_off_by(-120)

    def test_a_preemptible_stamped_by_a_clock_far_behind_is_seen(self):
        # Its compute's clock is minutes behind: no query of changes finds
        # it, Placement's usage on host-B says there is more than listed.
        fresh = self.fresh_preemptible_on_host_b()
        cell_uuid = save(fresh['id'])
        synced = self.scheduler.manager.instances._synced[cell_uuid]
        save(fresh['id'], updated_at=synced - 2 * instance_cache.MARGIN)
        self.assert_next_victim('fresh')

    def test_a_save_stamped_before_the_last_read_is_seen(self):
        # Another host's clock, or a save committed late: its time lies
        # before the cache's last query began, within the margin.
        cell_uuid = self.save('B-3', locked=True, locked_by='admin')
        synced = self.scheduler.manager.instances._synced[cell_uuid]
        self.save('B-3', updated_at=synced - datetime.timedelta(seconds=30))
        self.assert_next_victim('A-0')

    def test_a_lock_stamped_far_in_the_past_still_protects(self):
        # A clock more than the margin behind: the cache still lists B-3
        # as a victim; its row, read again before the write, does not.
        b3 = self.server_id('B-3')
        cell_uuid = self.save('B-3', locked=True, locked_by='admin')
        synced = self.scheduler.manager.instances._synced[cell_uuid]
        self.save('B-3', updated_at=synced - 2 * instance_cache.MARGIN)

        self.boot('medium', 'next')
        self.wait_for_terminations()

        self.assertNotIn(b3, self.victim_uuids())
        self.assertIn('B-3', self.live_names())
        self.assert_within_capacity()

    def save_unseen(self, uuid, **fields):
        """Save ``uuid`` with ``fields`` changed, by a clock more than the
        margin behind: no query of changes finds the change."""
        cell_uuid = save(uuid, **fields)
        synced = self.scheduler.manager.instances._synced[cell_uuid]
        save(uuid, updated_at=synced - 2 * instance_cache.MARGIN)

    def assert_not_taken(self, uuid):
        """The next request takes victims, ``uuid`` not among them."""
        self.boot('medium', 'next')
        self.wait_for_terminations()
        self.assertEqual(2, len(self.victim_uuids()))
        self.assertNotIn(uuid, self.victim_uuids())
        self.assert_within_capacity()

    def test_a_row_soft_deleted_unseen_is_no_victim(self):
        # B-3 (20) soft-deleted holds its allocations until reclaimed, and
        # the cache still lists it; its row, read again before the write,
        # says it is gone.
        b3 = self.server_id('B-3')
        self.save_unseen(b3, vm_state=vm_states.SOFT_DELETED)
        self.assert_not_taken(b3)

    def test_a_row_deleted_unseen_is_no_victim(self):
        # B-3's row deleted while Placement still holds its allocations (a
        # delete half done): a deletion keeps the row's stamp, so no query
        # of changes finds it; only its row, read again, tells.
        b3 = self.server_id('B-3')
        self.save_unseen(b3)
        ctxt = nova_context.get_admin_context()
        mapping = objects.InstanceMapping.get_by_instance_uuid(ctxt, b3)
        with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
            objects.Instance.get_by_uuid(cctxt, b3).destroy()
        self.assert_not_taken(b3)

    def test_a_deleted_row_archived_unseen_is_no_victim(self):
        # B-3 (20) is deleted and its row archived before the scheduler
        # looks again; host-B gets a preemptible only an operator's lock
        # protects, so Placement still counts as much there as B-3 took.
        ctxt = nova_context.get_admin_context()
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            ctxt, self.server_id('A-0')).cell_mapping
        # The cache has seen B-2 go: B-3 is the only row it misses.
        manager = self.scheduler.manager
        loader = host_records.InstanceLoader(ctxt, manager.host_manager.cells,
                                             None, manager.instances)
        manager.instances.preemptibles(loader._read, mapping.uuid, [])
        b3 = self.server('B-3')
        self._delete_server(b3)
        self._wait_until_deleted(b3)
        with nova_context.target_cell(ctxt, mapping) as cctxt:
            db_api.archive_deleted_rows(cctxt, max_rows=1000)
        locked = self.boot('medium', 'locked', host='host-B',
                           preemptible=True, minutes=0)
        self.lock_as_operator(locked['id'])
        # A fresh read: B-0 (50) and B-1 (40) on host-B, A-0 (31).
        self.assert_next_victim('A-0')


class FirstRead(cloud.OpieCloud):

    def test_a_failed_first_read_hides_nothing(self):
        test_preemption.fill_with_preemptibles(self)
        b2 = self.server('B-2')['id']
        # Saved long ago: the next query of changes will not see them.
        long_ago = timeutils.utcnow() - datetime.timedelta(hours=1)
        for server in self.api.get_servers():
            save(server['id'], updated_at=long_ago)
        real = host_records.InstanceLoader._read
        failures = [db_exc.DBConnectionError('the cell database is down')]

        def read(loader, cell_uuid, hosts=None, since=None):
            if hosts is not None and failures:
                raise failures.pop()
            return real(loader, cell_uuid, hosts, since)
        self.stub_out(
            'opie.nova.request.host_records.InstanceLoader._read', read)
        # A scheduler just started: nothing kept yet.
        self.scheduler.manager.instances = instance_cache.InstanceCache()
        self.boot('medium', 'during', expected_state='ERROR')
        self.assertEqual([], failures)

        self.boot('medium', 'after')
        self.wait_for_terminations()

        self.assertEqual([b2], self.victim_uuids())
