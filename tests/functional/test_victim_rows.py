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

"""A victim's row, read again before the write, has the last word.

:func:`opie.nova.request.host_records._rows` asks the cell database for the
victims' rows with Nova's ``deleted: False`` filter (a deleted row: its
``deleted`` column is not 0; a soft-deleted one: its VM state), sorted so that
SQLite finds them through the index of uuids. Nova's filter in Nova's order is
the oracle: for random row states, both give the same rows, and
:meth:`~opie.nova.request.host_records.InstanceLoader.not_victims` the same
answer, which is what the guarantee, written out on its own, gives; a row whose
``deleted`` column Nova would not write (NULL, or neither 0 nor the row's
id) is left out as Nova leaves it; and the rows are found through an
index on their uuids, not by walking every row not deleted.
Then attacks on the window between the cache's read and the victims' rows
read again: their owner soft-deletes, deletes or shelves one, and a
second scheduler worker takes the same victim first.
"""
import random

import fixtures
from oslo_utils import timeutils
import sqlalchemy as sa

from nova.compute import task_states
from nova.compute import vm_states
from nova import context as nova_context
from nova.db.main import api as db_api
from nova import objects

from opie.nova.request import host_records
from opie.testing import cloud

from tests.functional import test_preemption


def nova_rows(cctxt, uuids):
    """The rows as Nova's own filter leaves them, in Nova's order."""
    return objects.InstanceList.get_by_filters(
        cctxt, {'uuid': list(uuids), 'deleted': False},
        expected_attrs=['flavor'])


# What a row may become, field by field (Nova's own values, and those
# OPIE reads).
CHANGES = {
    'vm_state': [vm_states.ACTIVE, vm_states.STOPPED, vm_states.SOFT_DELETED,
                 vm_states.SHELVED_OFFLOADED, vm_states.RESIZED,
                 vm_states.ERROR, vm_states.DELETED, None],
    'task_state': [None, task_states.DELETING, task_states.RESIZE_PREP,
                   task_states.SHELVING_OFFLOADING, task_states.REBUILDING],
    'hidden': [False, True],
    'cleaned': [False, True],
    'locked_by': [None, 'owner', 'admin'],
    'host': ['host-A', 'host-B', None],
    'flavor': ['medium', 'preemptible.medium'],
}


def may_be_taken(row, host):
    """The guarantee, written out on its own: a row the database still
    has, on ``host``'s node, preemptible, neither locked by an operator
    nor leaving its host."""
    return (row.host == row.node == host
            and row.flavor.extra_specs.get('opie:preemptible') == 'true'
            and row.locked_by != 'admin'
            and row.task_state not in ('deleting', 'shelving_offloading')
            and row.vm_state not in ('deleted', 'shelved_offloaded',
                                     'soft-delete'))


class VictimRows(cloud.OpieCloud):

    def setUp(self):
        super().setUp()
        test_preemption.fill_with_preemptibles(self)
        self.ctxt = nova_context.get_admin_context()
        self.uuids = [s['id'] for s in self.api.get_servers()]
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            self.ctxt, self.uuids[0])
        self.cell = mapping.cell_mapping

    def change(self, rng, uuid):
        with nova_context.target_cell(self.ctxt, self.cell) as cctxt:
            instance = objects.Instance.get_by_uuid(cctxt, uuid)
            field = rng.choice(sorted(CHANGES))
            value = rng.choice(CHANGES[field])
            if field == 'locked_by':
                instance.locked, instance.locked_by = bool(value), value
            elif field == 'flavor':
                instance.flavor = objects.Flavor.get_by_name(cctxt, value)
            elif field == 'host':
                instance.host = instance.node = value
                instance.compute_id = value and objects.ComputeNode.\
                    get_by_host_and_nodename(cctxt, value, value).id
            else:
                setattr(instance, field, value)
            instance.save()

    def destroy(self, uuid):
        with nova_context.target_cell(self.ctxt, self.cell) as cctxt:
            objects.Instance.get_by_uuid(cctxt, uuid).destroy()

    def loader_record(self, host):
        manager = self.scheduler.manager
        loader = host_records.InstanceLoader(
            self.ctxt, manager.host_manager.cells, None)
        record = host_records.HostRecord(
            uuid=self._get_provider_uuid_by_host(host), host=host,
            nodename=host, cell_uuid=self.cell.uuid,
            capacity=None, normal_used=None)
        return loader, record

    def test_rows_are_those_nova_deleted_filter_leaves(self):
        # Random changes, a few rows destroyed on the way, a uuid no row
        # has: after each, the rows read by uuid alone and sorted out in
        # Python are those Nova's filter gives, and so are the victims
        # the database refuses on each host.
        rng = random.Random(20261127)
        live = list(self.uuids)
        asked = self.uuids + ['00000000-0000-0000-0000-000000000000']
        kept, left_out, victims = set(), set(), set()
        for step in range(240):
            if step % 60 == 59:
                gone = rng.choice(live)
                live.remove(gone)
                self.destroy(gone)
            else:
                self.change(rng, rng.choice(live))
            uuids = rng.sample(asked, rng.randint(1, len(asked)))
            with nova_context.target_cell(self.ctxt, self.cell) as cctxt:
                rows = nova_rows(cctxt, uuids)
                found = sorted(
                    i.uuid for i in host_records._rows(cctxt, uuids))
            self.assertEqual(sorted(i.uuid for i in rows), found,
                             'step %d' % step)
            now = timeutils.utcnow()
            for host in self.HOSTS:
                loader, record = self.loader_record(host)
                refused = loader.not_victims(record, uuids, now)
                self.assertEqual(
                    set(uuids) - {i.uuid for i in rows
                                  if may_be_taken(i, host)},
                    refused, 'step %d on %s' % (step, host))
                victims.update(set(uuids) - refused)
                with fixtures.MonkeyPatch(
                        'opie.nova.request.host_records._rows', nova_rows):
                    self.assertEqual(
                        loader.not_victims(record, uuids, now), refused,
                        'step %d on %s' % (step, host))
            kept.update(found)
            left_out.update(set(uuids) - set(found))
        # Every row was kept, left out, and a victim on the way.
        self.assertEqual(set(self.uuids), kept)
        self.assertLessEqual(set(self.uuids), left_out)
        self.assertEqual(set(self.uuids), victims)

    def test_a_deleted_column_nova_would_not_write_is_left_out(self):
        # Written by hand or by another tool: Nova takes such a row for
        # deleted (its API answers 404); so does OPIE.
        @db_api.pick_context_manager_writer
        def write(context, uuid, value):
            context.session.execute(sa.text(
                'UPDATE instances SET deleted = %s WHERE uuid = :uuid'
                % value), {'uuid': uuid})

        loader, record = self.loader_record('host-B')
        for uuid, value in zip(self.uuids, ('NULL', 'id + 1000')):
            with nova_context.target_cell(self.ctxt, self.cell) as cctxt:
                write(cctxt, uuid, value)
                self.assertEqual([], list(nova_rows(cctxt, [uuid])))
                self.assertEqual([], list(host_records._rows(cctxt, [uuid])))
            self.assertEqual({uuid}, loader.not_victims(
                record, [uuid], timeutils.utcnow()))

    def test_the_rows_are_found_through_an_index_on_uuids(self):
        plans = []

        def explain(conn, cursor, statement, params, context, many):
            if 'FROM instances' in statement and not plans:
                cursor.execute('EXPLAIN QUERY PLAN ' + statement, params)
                plans.append([row[-1] for row in cursor.fetchall()])
        sa.event.listen(sa.engine.Engine, 'before_cursor_execute', explain)
        self.addCleanup(sa.event.remove, sa.engine.Engine,
                        'before_cursor_execute', explain)

        with nova_context.target_cell(self.ctxt, self.cell) as cctxt:
            self.assertEqual(2, len(host_records._rows(cctxt, self.uuids[:2])))

        self.assertIn('SEARCH instances USING INDEX', plans[0][0])
        self.assertIn('(uuid=?', plans[0][0])

    def test_a_soft_deleted_row_is_found_neither_way(self):
        # Both states of the row Nova's filter names: deleted (the column
        # holds the row's id) and soft-deleted (the VM state).
        uuid = self.uuids[0]
        with nova_context.target_cell(self.ctxt, self.cell) as cctxt:
            instance = objects.Instance.get_by_uuid(cctxt, uuid)
            instance.vm_state = vm_states.SOFT_DELETED
            instance.save()
            every = objects.InstanceList.get_by_filters(
                cctxt, {'uuid': [uuid]}, expected_attrs=['flavor'])
            self.assertEqual([False], [i.deleted for i in every])
            self.assertEqual([], list(host_records._rows(cctxt, [uuid])))
            self.assertEqual([], list(nova_rows(cctxt, [uuid])))
            instance.vm_state = vm_states.ACTIVE
            instance.save()
            self.assertEqual([uuid], [i.uuid for i in
                                      host_records._rows(cctxt, [uuid])])
            instance.destroy()
            every = objects.InstanceList.get_by_filters(
                cctxt, {'uuid': [uuid]}, expected_attrs=['flavor'])
            self.assertEqual([True], [i.deleted for i in every])
            self.assertEqual([], list(host_records._rows(cctxt, [uuid])))
            self.assertEqual([], list(nova_rows(cctxt, [uuid])))


class OwnerBetweenReadAndWrite(cloud.OpieCloud):
    """The cache has chosen B-3 (20 minutes lost); right before its row is
    read again, its owner acts on it."""

    def setUp(self):
        super().setUp()
        test_preemption.fill_with_preemptibles(self)
        # B-2 (5 minutes) goes; both hosts' preemptibles are now kept.
        self.boot('medium', 'first')
        self.wait_for_terminations()
        self.b3 = self.server('B-3')

    def before_rows(self, act):
        """Run ``act()`` once, right before a victim's row is read again;
        the list returned is empty once it ran."""
        pending = [act]
        real = host_records.InstanceLoader.not_victims

        def not_victims(loader, record, uuids, now):
            if pending and self.b3['id'] in uuids:
                pending.pop()()
            return real(loader, record, uuids, now)
        self.stub_out(
            'opie.nova.request.host_records.InstanceLoader.not_victims',
            not_victims)
        return pending

    def assert_not_taken(self, count):
        """After the next request, ``count`` victims in all (B-2
        included), B-3 not among them."""
        self.boot('medium', 'next')
        self.wait_for_terminations()
        victims = self.victim_uuids()
        self.assertEqual(count, len(victims))
        self.assertNotIn(self.b3['id'], victims)
        self.assertEqual(0, self.preempt_actions(self.b3['id']))
        self.assert_within_capacity()

    def test_soft_deleted_then_restored_it_is_not_taken(self):
        self.flags(reclaim_instance_interval=3600)

        def soft_delete():
            self.api.delete_server(self.b3['id'])
            self._wait_for_state_change(self.b3, 'SOFT_DELETED')
        pending = self.before_rows(soft_delete)

        # It still holds its room: another victim is taken.
        self.assert_not_taken(2)
        self.assertEqual([], pending)

        # Restored: it held its room all along.
        self.api.post_server_action(self.b3['id'], {'restore': None})
        self._wait_for_state_change(self.b3, 'ACTIVE')
        self.assertIn('B-3', self.live_names())
        self.assert_within_capacity()

    def test_deleted_it_is_not_taken(self):
        def delete():
            self._delete_server(self.b3)
            self._wait_until_deleted(self.b3)
        pending = self.before_rows(delete)

        # Its room is free: no other victim is taken.
        self.assert_not_taken(1)
        self.assertEqual([], pending)
        self.assertNotIn('B-3', self.live_names())

    def test_shelved_offloaded_it_is_not_taken(self):
        self.flags(shelved_offload_time=0)

        def shelve():
            self.api.post_server_action(self.b3['id'], {'shelve': None})
            self._wait_for_state_change(self.b3, 'SHELVED_OFFLOADED')
        pending = self.before_rows(shelve)

        self.assert_not_taken(1)
        self.assertEqual([], pending)
        self.assertIn('B-3', self.live_names())


class SecondWorkerBetweenReadAndWrite(cloud.OpieCloud):

    def setUp(self):
        super().setUp()
        test_preemption.fill_with_preemptibles(self)
        self.other = self.other_worker()

    def test_a_victim_taken_by_another_worker_is_not_taken_twice(self):
        # Both workers choose B-2 (5 minutes); the other one writes while
        # this one is about to read B-2's row again.
        cheapest = sorted(self.server(n)['id'] for n in ('B-2', 'B-3'))
        pending = [True]
        real = host_records.InstanceLoader.not_victims

        def not_victims(loader, *args, **kwargs):
            if pending:
                pending.pop()
                with self.served_by(self.other):
                    self.boot('medium', 'second')
            return real(loader, *args, **kwargs)
        self.stub_out(
            'opie.nova.request.host_records.InstanceLoader.not_victims',
            not_victims)

        self.boot('medium', 'first')
        self.wait_for_terminations()

        self.assertEqual([], pending)
        victims = self.victim_uuids()
        # The other worker took B-2; this one, refused, the next cheapest.
        self.assertEqual(cheapest, sorted(victims))
        for uuid in victims:
            self.assertEqual(1, self.preempt_actions(uuid))
        self.assertLessEqual({'first', 'second'}, set(self.live_names()))
        self.assert_within_capacity()
