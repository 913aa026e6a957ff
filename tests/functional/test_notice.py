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

"""A victim's notice through a real Nova (issue 26).

Its flavor promises ``opie:notice`` seconds: the victim is told (server
metadata, instance action event, notification), stopped with a clean
shutdown when the notice ends, and only then deleted; the server that
displaced it is built only once it has stopped. Each order is checked
from what the fake hypervisor saw when it acted, not from the clock.
"""
import fixtures
from nova.compute import power_state
from nova import context as nova_context
from nova import objects
from nova.tests.functional.api import client
from oslo_utils import timeutils

from opie.core import contract
from opie.nova import metrics
from opie.nova import notifications
from opie.nova.request import notice
from opie.testing import cloud
from opie.testing import harness
from opie.testing import notification_samples

NOTICE = 1


class WatchedDriver(harness.PaperDriver):
    """Notes what each guest looked like when the hypervisor acted."""
    seen = []

    def _states(self):
        return {uuid: guest.state for uuid, guest in self.instances.items()}

    def spawn(self, context, instance, *args, **kwargs):
        self.seen.append(('spawn', instance.uuid, self._states()))
        return super().spawn(context, instance, *args, **kwargs)

    def power_off(self, instance, timeout=0, retry_interval=0):
        self.seen.append(('power_off', instance.uuid, dict(
            timeout=timeout, now=timeutils.utcnow(),
            metadata=dict(instance.metadata),
            told=len(cloud.OpieCloud.notifications(notifications.START)))))
        return super().power_off(instance, timeout, retry_interval)

    def destroy(self, context, instance, *args, **kwargs):
        self.seen.append(('destroy', instance.uuid, self._states()))
        return super().destroy(context, instance, *args, **kwargs)


class NoticeCloud(cloud.OpieCloud):
    """One host full of preemptibles whose flavor promises NOTICE s."""
    HOSTS = ('host-A',)
    DRIVER = WatchedDriver
    # Casts to the compute return before it acts, as in a real cloud: the
    # scheduler must wait for the stop it asked for.
    CAST_AS_CALL = False

    def setUp(self):
        super().setUp()
        WatchedDriver.seen = self.seen = []
        vcpus, memory_mb, disk_gb = harness.SIZES['medium']
        self.preemptible['medium'] = self._create_flavor(
            name='preemptible.noticed', vcpu=vcpus, memory_mb=memory_mb,
            disk=disk_gb, ephemeral=0, extra_spec=dict(
                cloud.preemptible_specs(vcpus, memory_mb, disk_gb),
                **{'opie:notice': str(NOTICE)}))
        # Host-A full: 4 x 2 vCPU; the cheapest victim is P-2 (5 min).
        for i, minutes in enumerate((110, 220, 65, 80)):
            self.seed('medium', 'P-%d' % i, 'host-A', preemptible=True,
                      minutes=minutes)
        self.victim = self.server('P-2')['id']
        del self.seen[:]

    def events(self, kind, uuid):
        return [seen for k, u, seen in self.seen if (k, u) == (kind, uuid)]

    def during_the_notice(self, act):
        """Run ``act()`` once, while the scheduler waits out a notice;
        the list returned is empty once it ran."""
        manager = self.scheduler.manager
        real = manager.notice.sleep
        pending = [act]

        def sleep(seconds):
            if pending:
                pending.pop()()
            real(seconds)
        self.useFixture(fixtures.MockPatchObject(manager.notice, 'sleep',
                                                 sleep))
        return pending

    def when_answered(self, uuid):
        """The list of the VM state of ``uuid`` (None: gone) each time
        the scheduler has answered a request that preempted."""
        notice_phase = self.scheduler.manager.notice
        real = notice_phase.preempt
        found = []

        def preempt(*args):
            real(*args)
            try:
                server = self.admin_api.get_server(uuid)
            except client.OpenStackApiNotFoundException:
                found.append(None)
            else:
                found.append(server['OS-EXT-STS:vm_state'])
        self.useFixture(fixtures.MockPatchObject(notice_phase, 'preempt',
                                                 preempt))
        return found


class Notice(NoticeCloud):

    def test_told_then_stopped_cleanly_then_deleted_then_displaced(self):
        answered = self.when_answered(self.victim)
        given = metrics.value('opie_notice_given_seconds_sum') or 0
        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        # The operator's measure of the contract, where it is kept.
        self.assertGreaterEqual(
            metrics.value('opie_notice_given_seconds_sum') - given, NOTICE)

        # Told before the shutdown, and the shutdown only when due.
        [off] = self.events('power_off', self.victim)
        at = notice.parse(off['metadata'][contract.NOTICE_KEY])
        self.assertGreaterEqual(off['now'], at)
        self.assertEqual(1, off['told'])
        # A clean shutdown: Nova gives the guest time (0 is a hard one).
        self.assertGreater(off['timeout'], 0)
        # Stopped before deleted; stopped before the scheduler answers, so
        # before the new server starts.
        self.assertEqual(['stopped'], answered)
        [destroyed] = self.events('destroy', self.victim)
        self.assertEqual(power_state.SHUTDOWN, destroyed[self.victim])
        [spawned] = self.events('spawn', server['id'])
        # Stopped, or deleted already.
        self.assertIn(spawned.get(self.victim), (power_state.SHUTDOWN, None))
        self.assertLess(self.seen.index(('power_off', self.victim, off)),
                        self.seen.index(('spawn', server['id'], spawned)))
        # What its owner can read afterwards, and the operator.
        [message] = self.notifications(notifications.START)
        payload = self.data(message['payload'])
        self.assertEqual((self.victim, NOTICE, server['id']),
                         (payload['victim']['uuid'], payload['notice'],
                          payload['instance_uuid']))
        sample = notification_samples.load('opie-preempt-start')
        self.assertEqual([], notification_samples.mismatches(
            sample, {key: message[key] for key in sample}))
        action = [a for a in self.api.get_instance_actions(self.victim)
                  if a['action'] == 'opie-preempt'][0]
        events = self.admin_api.get_instance_action_details(
            self.victim, action['request_id'])['events']
        self.assertEqual({'opie_notice', 'opie_preempt'},
                         {e['event'] for e in events})
        # The others were never told.
        for name in ('P-0', 'P-1', 'P-3'):
            uuid = self.server(name)['id']
            self.assertNotIn(contract.NOTICE_KEY,
                             self.server(name)['metadata'])
            self.assertEqual([], self.events('power_off', uuid))
        self.assertEqual(['P-0', 'P-1', 'P-3', 'normal'], self.live_names())
        self.assert_within_capacity()

    def test_a_victim_its_owner_deletes_meanwhile_is_not_waited_for(self):
        pending = self.during_the_notice(
            lambda: self.api.delete_server(self.victim))

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual([], pending)
        self.assertEqual([], self.events('power_off', self.victim))
        [spawned] = self.events('spawn', server['id'])
        self.assertNotIn(self.victim, spawned)
        self.assert_within_capacity()

    def test_a_victim_nova_cannot_stop_is_gone_before_the_build(self):
        def pause():
            self.api.post_server_action(self.victim, {'pause': None})
            self._wait_for_state_change(self.server('P-2'), 'PAUSED')
        pending = self.during_the_notice(pause)
        answered = self.when_answered(self.victim)

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual([], pending)
        # No clean shutdown for a paused guest: deleted at its time, and
        # gone before the scheduler answers, so before the build.
        self.assertEqual([], self.events('power_off', self.victim))
        self.assertEqual([None], answered)
        [spawned] = self.events('spawn', server['id'])
        self.assertNotIn(self.victim, spawned)
        self.assertNotIn('P-2', self.live_names())
        self.assert_within_capacity()

    def test_the_reconciler_leaves_a_victim_under_notice_alone(self):
        uuid = self.claim_without_terminating('P-2', 'host-A')
        ctxt = nova_context.get_admin_context()
        mapping = objects.InstanceMapping.get_by_instance_uuid(ctxt, uuid)
        with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
            instance = objects.Instance.get_by_uuid(
                cctxt, uuid, expected_attrs=['system_metadata'])
            instance.system_metadata = dict(
                instance.system_metadata,
                **{notice.SYSTEM_KEY: contract.notice_stamp(
                    timeutils.utcnow())})
            instance.save()
        reconciler = self.scheduler.manager.reconciler
        reconciler.claimed_grace = reconciler.claimed_grace * 0

        self.assertEqual([], reconciler.run(ctxt))
        self.assertIn('P-2', self.live_names())


class NoticeThenShelve(NoticeCloud):
    OPIE = {'termination_mode': 'shelve'}

    def setUp(self):
        self.flags(shelved_offload_time=0)
        super().setUp()

    def test_a_victim_shelved_after_its_notice_keeps_no_notice(self):
        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        shelved = self._wait_for_state_change(self.server('P-2'),
                                              'SHELVED_OFFLOADED')
        # Stopped cleanly first; the shelve then powers off what is off.
        self.assertGreater(self.events('power_off', self.victim)[0][
            'timeout'], 0)
        self.assertNotIn(contract.NOTICE_KEY, shelved['metadata'])
        self.assertEqual('ACTIVE', self.api.get_server(server['id'])[
            'status'])
