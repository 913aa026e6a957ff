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

"""Attacks on the notice (issue 26) through a real Nova: a tenant writing
its own ``opie:preempt_at`` or acting on its victim during the notice, a
second scheduler worker and the reconciler (another process) during it,
and a worker that dies in it. Each is decided from state (servers, their
metadata, Placement's usages), never from the clock: the reconciler is
given its time (``run(now=...)``)."""
import datetime
from nova.compute import power_state
from nova import context as nova_context
import nova.conf
from nova import objects
from oslo_utils import timeutils

from opie.core import contract
from opie.nova import notifications
from opie.nova.request import notice
from tests.functional import test_notice

CONF = nova.conf.CONF
# What an owner writes to keep its server: a time far away, the last one
# the calendar has.
FOREVER = ('2999-01-01T00:00:00Z', '9999-12-31T23:59:59Z')


class _Cloud(test_notice.NoticeCloud):
    """Host-A full of preemptibles promised notice (as test_notice), and
    a reconciler that takes victims left running at once."""

    def setUp(self):
        super().setUp()
        self.ctxt = nova_context.get_admin_context()
        self.reconciler = self.scheduler.manager.reconciler
        self.reconciler.claimed_grace *= 0

    def assert_off_before_the_build(self, pending, answered, server):
        """The owner's act ran during the notice, and the victim was off
        its host (stopped or gone) when the scheduler answered and when
        ``server`` spawned in its room, and gone in the end."""
        self.assertEqual([], pending)
        self.assertIn(answered, (['stopped'], [None]))
        [spawned] = self.events('spawn', server['id'])
        self.assertNotEqual(power_state.RUNNING, spawned.get(self.victim))
        self.assertNotIn('P-2', self.live_names())
        self.assert_within_capacity()

    def give_notice(self, uuid, at):
        """As the scheduler does: ``opie:preempt_at`` written as admin,
        in the metadata and the system metadata."""
        mapping = objects.InstanceMapping.get_by_instance_uuid(self.ctxt,
                                                               uuid)
        with nova_context.target_cell(self.ctxt,
                                      mapping.cell_mapping) as cctxt:
            instance = objects.Instance.get_by_uuid(
                cctxt, uuid, expected_attrs=['metadata', 'system_metadata'])
            instance.metadata = dict(instance.metadata,
                                     **{contract.NOTICE_KEY:
                                        contract.notice_stamp(at)})
            instance.system_metadata = dict(
                instance.system_metadata,
                **{notice.SYSTEM_KEY: contract.notice_stamp(at)})
            instance.save()

    def assert_stopped_then_displaced(self, server):
        """The victim was stopped cleanly, then deleted; ``server`` built
        in its room."""
        self.assertEqual(1, len(self.events('power_off', self.victim)))
        [spawned] = self.events('spawn', server['id'])
        self.assertNotEqual(power_state.RUNNING, spawned.get(self.victim))
        self.assertNotIn('P-2', self.live_names())
        self.assert_within_capacity()

    def left_running(self, name, normal):
        """A worker takes preemptible ``name`` for server ``normal``,
        built in its room, and dies before terminating it; its uuid."""
        uuid = self.claim_without_terminating(name, 'host-A')
        self.assertEqual('host-A', self.host_of(self.boot('medium', normal)))
        return uuid


class NoticeAttacks(_Cloud):
    # a hostile tenant ------------------------------------------------------
    def test_an_owners_forged_notice_does_not_keep_a_victim_left_running(
            self):
        # Its owner had written a notice of its own, as far away as the
        # calendar goes.
        for name, normal, forever in zip(('P-2', 'P-3'), ('N-1', 'N-2'),
                                         FOREVER):
            uuid = self.left_running(name, normal)
            self.api.post_server_metadata(uuid, {contract.NOTICE_KEY: forever})

            done = self.reconciler.run(self.ctxt)

            self.assertEqual([uuid], [v.uuid for p in done
                                      for v in p.victims])
            self._wait_until_deleted({'id': uuid})
            self.assert_within_capacity()

    def test_an_owner_rewriting_its_notice_does_not_move_its_stop(self):
        pending = self.during_the_notice(lambda: self.api.post_server_metadata(
            self.victim, {contract.NOTICE_KEY: FOREVER[1]}))

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual([], pending)
        self.assert_stopped_then_displaced(server)

    def test_an_owner_removing_its_notice_does_not_move_its_stop(self):
        pending = self.during_the_notice(
            lambda: self.api.delete_server_metadata(self.victim,
                                                    contract.NOTICE_KEY))

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual([], pending)
        self.assert_stopped_then_displaced(server)

    def test_an_owner_whose_metadata_is_full_is_told_all_the_same(self):
        self.api.post_server_metadata(self.victim, {
            'k%d' % i: 'v' for i in range(CONF.quota.metadata_items)})

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        [off] = self.events('power_off', self.victim)
        self.assertIn(contract.NOTICE_KEY, off['metadata'])
        self.assertEqual(1, off['told'])
        self.assert_stopped_then_displaced(server)

    def test_an_owner_locking_its_victim_during_the_notice(self):
        pending = self.during_the_notice(lambda: self.api.post_server_action(
            self.victim, {'lock': None}))

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual([], pending)
        self.assert_stopped_then_displaced(server)

    def test_an_owner_stopping_its_victim_during_the_notice(self):
        def stop():
            self.api.post_server_action(self.victim, {'os-stop': None})
            self._wait_for_state_change(self.server('P-2'), 'SHUTOFF')
        pending = self.during_the_notice(stop)
        answered = self.when_answered(self.victim)

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assert_off_before_the_build(pending, answered, server)

    def test_an_owner_rebuilding_its_victim_during_the_notice(self):
        # Rebuilt by its time (stopped cleanly then), or still busy with it
        # (terminated then): off its host before the build either way.
        image = self.server('P-2')['image']['id']
        pending = self.during_the_notice(lambda: self.api.post_server_action(
            self.victim, {'rebuild': {'imageRef': image}}))
        answered = self.when_answered(self.victim)

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assert_off_before_the_build(pending, answered, server)

    def test_an_owner_shelving_its_victim_during_the_notice(self):
        def shelve():
            self.api.post_server_action(self.victim, {'shelve': None})
            self._wait_for_state_change(self.server('P-2'),
                                        'SHELVED_OFFLOADED')
        pending = self.during_the_notice(shelve)

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual([], pending)
        [spawned] = self.events('spawn', server['id'])
        self.assertNotIn(self.victim, spawned)
        self.assertEqual([], self.notifications(notifications.ERROR))
        self.assert_within_capacity()

    # the reconciler ----------------------------------------------------
    def test_the_reconciler_leaves_a_victim_under_notice_to_its_worker(
            self):
        found = []
        pending = self.during_the_notice(lambda: found.append(
            self.reconciler.run(self.ctxt)))

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual([[]], found)
        self.assertEqual([], pending)
        self.assert_stopped_then_displaced(server)

    def test_a_reconciler_past_the_notice_and_a_late_worker_terminate_once(
            self):
        # The worker is late (its process stalled): the reconciler, past
        # the notice and the stop time, terminates the victim first.
        found = []

        def late():
            at = notice.parse(
                self.server('P-2')['metadata'][contract.NOTICE_KEY])
            found.append(self.reconciler.run(self.ctxt, now=at + _stop_time()))
        pending = self.during_the_notice(late)

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual([], pending)
        self.assertEqual([[self.victim]],
                         [[v.uuid for p in done for v in p.victims]
                          for done in found])
        # Deleted once, by the reconciler; the worker found it gone.
        self.assertEqual([], self.events('power_off', self.victim))
        self.assertEqual(1, len(self.events('destroy', self.victim)))
        self.assertEqual(1, len(self.notifications(notifications.END)))
        self.assertEqual([], self.notifications(notifications.ERROR))
        [spawned] = self.events('spawn', server['id'])
        self.assertNotIn(self.victim, spawned)
        self.assert_within_capacity()

    def test_a_dead_workers_victim_waits_its_notice_and_stop_time(self):
        # The worker gave notice, then died: nothing more of it.
        uuid = self.left_running('P-2', 'normal')
        at = timeutils.utcnow().replace(microsecond=0) + datetime.timedelta(
            seconds=test_notice.NOTICE)
        self.give_notice(uuid, at)
        second = datetime.timedelta(seconds=1)

        for now in (at - second, at, at + _stop_time() - second):
            self.assertEqual([], self.reconciler.run(self.ctxt, now=now))
            self.assertIn('P-2', self.live_names())
        done = self.reconciler.run(self.ctxt, now=at + _stop_time())

        self.assertEqual([uuid], [v.uuid for p in done for v in p.victims])
        self._wait_until_deleted({'id': uuid})
        self.assert_within_capacity()


class SecondWorker(_Cloud):
    # The other worker's request runs inside the first's notice, from
    # its API call to its build: casts are calls.
    CAST_AS_CALL = True

    def test_a_second_worker_during_the_notice_takes_another_victim(self):
        other = self.other_worker()
        second = []

        def competitor():
            with self.served_by(other):
                second.append(self.boot('medium', 'normal-2'))
        pending = self.during_the_notice(competitor)

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual([], pending)
        # P-2 held nothing during its notice, yet the second request did
        # not take it again: it took P-3, the next cheapest.
        self.assertEqual(['P-0', 'P-1', 'normal', 'normal-2'],
                         self.live_names())
        self.assertEqual(1, len(self.events('power_off', self.victim)))
        p3 = [uuid for kind, uuid, _ in self.seen
              if kind == 'destroy' and uuid != self.victim]
        self.assertEqual(1, len(p3))
        self.assertEqual(2, len(self.notifications(notifications.START)))
        self.assertEqual([], self.notifications(notifications.ERROR))
        for each in (server, second[0]):
            self.assertEqual('host-A', self.host_of(each))
        self.assert_within_capacity()


def _stop_time():
    """How long after its notice a victim may take to stop."""
    return datetime.timedelta(seconds=CONF.shutdown_timeout
                              + notice.STOP_MARGIN)
