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

"""Maximum lifetime through a real Nova (issue 26).

The reconciler's lease holder ends each preemptible older than its
flavor's ``opie:maximum_lifetime``, once: told first (its flavor's
notice), stopped cleanly when the notice ends, then deleted or shelved.
Time moves by the servers' creation times in the database and the ``now``
each pass is given; each order is checked from what the fake hypervisor
saw when it acted, not from the clock.
"""
import datetime
import json

import fixtures
from nova.compute import power_state
from nova import context as nova_context
from nova import objects
from oslo_utils import timeutils

from opie.core import contract
from opie.nova import notifications
from opie.nova.request import notice
from opie.testing import cloud
from opie.testing import harness
from tests.functional import test_notice

LIFETIME = 3600
NOTICE = 30
OLD, YOUNG = 120, 30    # minutes since their creation


class LifetimeCloud(cloud.OpieCloud):
    HOSTS = ('host-A',)
    DRIVER = test_notice.WatchedDriver
    # Casts to the compute return before it acts, as in a real cloud.
    CAST_AS_CALL = False

    def setUp(self):
        super().setUp()
        test_notice.WatchedDriver.seen = self.seen = []
        self.ctxt = nova_context.get_admin_context()
        self.reconciler = self.scheduler.manager.reconciler
        self.aging = self.flavor('preemptible.aging', notice=NOTICE)
        self.brief = self.flavor('preemptible.brief')

    def flavor(self, name, **terms):
        """A medium preemptible flavor of maximum lifetime LIFETIME."""
        vcpus, memory_mb, disk_gb = harness.SIZES['medium']
        terms = dict(terms, maximum_lifetime=LIFETIME)
        return self._create_flavor(
            name=name, vcpu=vcpus, memory_mb=memory_mb, disk=disk_gb,
            ephemeral=0, extra_spec=dict(
                cloud.preemptible_specs(vcpus, memory_mb, disk_gb),
                **{'opie:' + k: str(v) for k, v in terms.items()}))

    def aged(self, flavor_id, name, minutes):
        server = self._create_server(name=name, flavor_id=flavor_id,
                                     networks='none', host='host-A')
        self.set_launched_at(server['id'], minutes)
        return server

    def reconcile(self, now, reconciler=None, renew=lambda: True):
        """One pass of the lease holder at ``now``: what it terminated."""
        return (reconciler or self.reconciler).run(self.ctxt, now,
                                                   renew=renew)

    def events(self, kind, uuid):
        return [seen for k, u, seen in self.seen if (k, u) == (kind, uuid)]

    def told(self):
        return [self.data(m['payload']) for m in
                self.notifications(notifications.START)]

    def preempt_at(self, server):
        return notice.parse(self.admin_api.get_server(
            server['id'])['metadata'].get(contract.NOTICE_KEY))

    def wait_idle(self, server):
        """Until the compute is done with what it was asked (a stop)."""
        return self._wait_for_server_parameter(
            server, {'OS-EXT-STS:task_state': None})

    def preempt_events(self, uuid):
        action = [a for a in self.api.get_instance_actions(uuid)
                  if a['action'] == 'opie-preempt'][0]
        return {e['event']: e for e in
                self.admin_api.get_instance_action_details(
                    uuid, action['request_id'])['events']}


class Lifetime(LifetimeCloud):

    def test_told_then_stopped_cleanly_then_deleted_once(self):
        old = self.aged(self.aging, 'old', OLD)
        self.aged(self.aging, 'young', YOUNG)
        self.boot('medium', 'ageless', preemptible=True, minutes=10 * OLD)
        self.boot('medium', 'normal', minutes=10 * OLD)
        now = timeutils.utcnow()

        # Told, and nothing more while the notice runs.
        self.assertEqual([], self.reconcile(now))
        at = self.preempt_at(old)
        self.assertGreaterEqual(at, now + datetime.timedelta(
            seconds=NOTICE - 1))
        self.assertEqual([], self.reconcile(now))
        self.assertEqual([], self.reconcile(at - datetime.timedelta(
            seconds=1)))
        [told] = self.told()
        self.assertEqual((old['id'], 'lifetime', NOTICE, None),
                         (told['victim']['uuid'], told['reason'],
                          told['notice'], told['instance_uuid']))
        self.assertEqual([], self.events('power_off', old['id']))

        # Its time: stopped cleanly (Nova gives the guest time; 0 is a
        # hard power-off), and not deleted before it is off.
        self.assertEqual([], self.reconcile(at))
        self._wait_for_state_change(old, 'SHUTOFF')
        [off] = self.events('power_off', old['id'])
        self.assertGreater(off['timeout'], 0)
        self.assertEqual(1, off['told'])
        self.assertEqual(contract.notice_stamp(at),
                         off['metadata'][contract.NOTICE_KEY])
        self.assertEqual([], self.events('destroy', old['id']))

        # Stopped: deleted, and recorded.
        [done] = self.reconcile(at)
        self._wait_until_deleted(old)
        self.assertEqual([old['id']], [v.uuid for v in done.victims])
        [destroyed] = self.events('destroy', old['id'])
        self.assertEqual(power_state.SHUTDOWN, destroyed[old['id']])
        [end] = self.preempt_notifications()
        self.assertEqual(('lifetime', None, [old['id']]), (
            end['payload']['reason'], end['payload']['instance_uuid'],
            [v['uuid'] for v in end['payload']['victims']]))
        events = self.preempt_events(old['id'])
        self.assertEqual({'opie_notice', 'opie_preempt'}, set(events))
        self.assertIn('maximum lifetime of %d s reached' % LIFETIME,
                      json.loads(events['opie_preempt']['details'])['why'])

        # Once: later passes find nothing to do; the young, the ageless
        # and the normal server were never told.
        self.assertEqual([], self.reconcile(at))
        self.assertEqual(1, len(self.told()))
        self.assertEqual(1, len(self.preempt_notifications()))
        self.assertEqual(['ageless', 'normal', 'young'], self.live_names())
        for name in ('ageless', 'normal', 'young'):
            self.assertNotIn(contract.NOTICE_KEY,
                             self.server(name)['metadata'])

    def test_without_notice_it_is_terminated_in_one_pass(self):
        old = self.aged(self.brief, 'old', OLD)

        [done] = self.reconcile(timeutils.utcnow())

        self._wait_until_deleted(old)
        self.assertEqual([], self.told())
        self.assertEqual([], self.events('power_off', old['id']))
        self.assertEqual(['lifetime'], [n['payload']['reason'] for n in
                                        self.preempt_notifications()])

    def test_two_lease_holders_end_it_once(self):
        """The other holder (another worker's reconciler) acts at each
        step while this one renews its lease before acting on the same
        server."""
        old = self.aged(self.aging, 'old', OLD)
        other = self.other_worker().reconciler

        def overlapping(now):
            pending = [lambda: self.reconcile(now, other)]

            def renew():
                if pending:
                    pending.pop()()
                return True
            return self.reconcile(now, renew=renew)

        overlapping(timeutils.utcnow())
        at = self.preempt_at(old)
        overlapping(at)
        self.wait_idle(old)
        overlapping(at)
        self._wait_until_deleted(old)

        self.assertEqual(1, len(self.told()))
        self.assertEqual(1, len(self.events('power_off', old['id'])))
        self.assertEqual(1, len(self.events('destroy', old['id'])))
        self.assertEqual([[old['id']]], [
            [v['uuid'] for v in n['payload']['victims']]
            for n in self.preempt_notifications()])
        self.assertEqual(1, self.preempt_actions(old['id']))

    def test_stopped_by_its_owner_it_is_told_then_ended_without_a_stop(
            self):
        old = self.aged(self.aging, 'old', OLD)
        self._stop_server(old)
        del self.seen[:]

        self.reconcile(timeutils.utcnow())
        at = self.preempt_at(old)
        self.assertEqual(1, len(self.told()))
        [done] = self.reconcile(at)
        self._wait_until_deleted(old)

        self.assertEqual([], self.events('power_off', old['id']))

    def test_started_again_by_its_owner_after_its_stop_it_is_ended(self):
        old = self.aged(self.aging, 'old', OLD)
        self.reconcile(timeutils.utcnow())
        at = self.preempt_at(old)
        self.reconcile(at)
        self._wait_for_state_change(old, 'SHUTOFF')
        self._start_server(old)

        [done] = self.reconcile(at)
        self._wait_until_deleted(old)

        self.assertEqual(1, len(self.events('power_off', old['id'])))

    def test_the_next_lease_holder_goes_on_where_one_died(self):
        old = self.aged(self.aging, 'old', OLD)
        self.reconcile(timeutils.utcnow())
        at = self.preempt_at(old)
        # The holder dies; another worker's process takes the lease over.
        other = self.other_worker().reconciler

        self.reconcile(at, other)
        self._wait_for_state_change(old, 'SHUTOFF')
        [done] = self.reconcile(at, other)
        self._wait_until_deleted(old)

        self.assertEqual(1, len(self.told()))
        self.assertEqual(1, len(self.events('power_off', old['id'])))

    def test_a_key_its_owner_writes_neither_ends_nor_spares_it(self):
        old = self.aged(self.aging, 'old', OLD)
        now = timeutils.utcnow()
        # Before any notice: a time long past would skip the notice.
        self.api.post_server_metadata(old['id'], {
            contract.NOTICE_KEY: contract.notice_stamp(
                now - datetime.timedelta(days=1))})

        self.reconcile(now)
        at = self.preempt_at(old)
        self.assertGreater(at, now)
        self.assertEqual(1, len(self.told()))
        # During the notice: a time far ahead would put the end off.
        self.api.post_server_metadata(old['id'], {
            contract.NOTICE_KEY: contract.notice_stamp(
                now + datetime.timedelta(days=365))})
        self.reconcile(at)
        self._wait_for_state_change(old, 'SHUTOFF')
        self.reconcile(at)
        self._wait_until_deleted(old)

        self.assertEqual(1, len(self.told()))

    def test_a_server_locked_by_an_operator_waits_for_the_unlock(self):
        old = self.aged(self.brief, 'old', OLD)
        self.lock_as_operator(old['id'])
        now = timeutils.utcnow()

        self.assertEqual([], self.reconcile(now))
        self.assertIn('old', self.live_names())

        self.admin_api.post_server_action(old['id'], {'unlock': None})
        [done] = self.reconcile(now)
        self._wait_until_deleted(old)

    def test_a_server_busy_with_a_task_waits_for_a_later_pass(self):
        old = self.aged(self.brief, 'old', OLD)
        self.set_task_state(old['id'], 'resize_prep')
        now = timeutils.utcnow()

        self.assertEqual([], self.reconcile(now))
        self.assertIn('old', self.live_names())

        self.set_task_state(old['id'], None)
        [done] = self.reconcile(now)
        self._wait_until_deleted(old)

    def test_a_notice_is_a_compare_and_swap_on_the_server(self):
        """Its owner begins an act (a stop) between the lease holder's
        read and its write: no notice now; the next pass gives it."""
        old = self.aged(self.aging, 'old', OLD)
        lifetime = self.reconciler.lifetime
        real = lifetime._read
        pending = [lambda: self.set_task_state(old['id'], 'powering-off')]

        def read(*args):
            found = real(*args)
            if pending:
                pending.pop()()
            return found
        self.useFixture(fixtures.MockPatchObject(lifetime, '_read',
                                                 side_effect=read))
        now = timeutils.utcnow()

        self.assertEqual([], self.reconcile(now))
        self.assertEqual([], pending)
        self.assertEqual([], self.told())
        self.assertIsNone(self.preempt_at(old))

        self.set_task_state(old['id'], None)
        self.reconcile(now)
        self.assertEqual(1, len(self.told()))
        self.assertIsNotNone(self.preempt_at(old))

    def set_task_state(self, uuid, task_state):
        mapping = objects.InstanceMapping.get_by_instance_uuid(self.ctxt,
                                                               uuid)
        with nova_context.target_cell(self.ctxt,
                                      mapping.cell_mapping) as cctxt:
            instance = objects.Instance.get_by_uuid(cctxt, uuid)
            instance.task_state = task_state
            instance.save()


class ShelvedForItsLifetime(LifetimeCloud):
    OPIE = {'termination_mode': 'shelve'}

    def setUp(self):
        self.flags(shelved_offload_time=0)
        super().setUp()

    def test_unshelved_by_its_owner_it_lives_a_lifetime_again(self):
        old = self.aged(self.aging, 'old', OLD)
        self.reconcile(timeutils.utcnow())
        at = self.preempt_at(old)
        self.reconcile(at)
        self._wait_for_state_change(old, 'SHUTOFF')
        [done] = self.reconcile(at)
        self._wait_for_state_change(old, 'SHELVED_OFFLOADED')

        self._unshelve_server(old)
        unshelved = timeutils.utcnow()
        self.assertIsNone(self.preempt_at(old))

        # Not again at once, though it was created long ago and the notice
        # of its first end is still in its metadata.
        for now in (at, unshelved, unshelved + datetime.timedelta(
                seconds=LIFETIME - 60)):
            self.assertEqual([], self.reconcile(now))
        self.assertEqual(1, len(self.told()))
        self.assertEqual('ACTIVE', self.server('old')['status'])
        # A lifetime after its unshelve, it is told again.
        self.reconcile(unshelved + datetime.timedelta(seconds=LIFETIME))
        self.assertEqual(2, len(self.told()))
        self.assertEqual('ACTIVE', self.server('old')['status'])
