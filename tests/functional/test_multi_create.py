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

"""Multi-create: victims on several hosts, all or nothing (acceptance 5)."""
import datetime

import fixtures
from oslo_utils import timeutils

import nova.conf
from nova import context as nova_context

from opie.nova import notifications
from opie.nova.request import claim
from opie.nova.request import give_back
from opie.testing import cloud

CONF = nova.conf.CONF


class MultiCreate(cloud.OpieCloud):
    """Each host: one normal large server and two medium preemptibles, so
    a large server fits once per host, after two preemptions there."""

    def setUp(self):
        super().setUp()
        for host in self.HOSTS:
            self.seed('large', 'normal-' + host[-1], host=host)
            for i, minutes in enumerate((70, 130)):
                self.seed('medium', 'P%s%d' % (host[-1], i), host=host,
                          preemptible=True, minutes=minutes)
        self.names = self.live_names()
        self.usages = {host: self.usage(host) for host in self.HOSTS}
        self.select_destinations.reset_mock()

    def create(self, count, expected_state):
        body = self._build_server(name='big', flavor_id=self.normal['large'],
                                  networks='none')
        body.update(min_count=count, max_count=count)
        self.api.post_server({'server': body})
        servers = [s for s in self.api.get_servers()
                   if s['name'].startswith('big-')]
        self.assertEqual(count, len(servers))
        return [self._wait_for_state_change(s, expected_state)
                for s in servers]

    def test_each_victim_serves_one_server(self):
        servers = self.create(2, 'ACTIVE')
        self.wait_for_terminations()

        self.assertEqual(['host-A', 'host-B'],
                         sorted(s['OS-EXT-SRV-ATTR:host'] for s in servers))
        self.assertEqual(1, self.select_destinations.call_count)
        self.assertEqual(['big-1', 'big-2', 'normal-A', 'normal-B'],
                         self.live_names())
        sent = self.preempt_notifications()
        victims = [v['uuid'] for n in sent
                   for v in n['payload']['victims']]
        self.assertEqual(4, len(set(victims)))
        self.assertEqual(['host-A', 'host-B'],
                         sorted(n['payload']['host'] for n in sent))
        self.assert_within_capacity()

    def test_no_notification_holds_up_a_termination(self):
        # The message bus may be down: every victim is terminated before
        # any notification is sent, and a send gives up.
        terminator = self.scheduler.manager.terminator
        events = []
        for obj, name, event in (
                (terminator.compute_api, 'delete', 'terminated'),
                (terminator.notifier, 'preempted', 'notified')):
            real = getattr(obj, name)

            def logged(*args, _real=real, _event=event, **kwargs):
                events.append(_event)
                return _real(*args, **kwargs)
            self.useFixture(fixtures.MockPatchObject(obj, name, logged))

        self.create(2, 'ACTIVE')
        self.wait_for_terminations()

        self.assertEqual(['terminated'] * 4 + ['notified'] * 2, events)
        self.assertEqual(notifications.RETRY,
                         terminator.notifier.notifier.retry)

    def test_request_that_cannot_be_fully_placed_terminates_nothing(self):
        servers = self.create(3, 'ERROR')

        self.assertIn('No valid host', servers[0]['fault']['message'])
        self.assertEqual(self.names, sorted(
            set(self.live_names()) - {'big-1', 'big-2', 'big-3'}))
        self.assertEqual([], self.preempt_notifications())
        # Victims claimed for the first two servers got their allocations
        # back; the servers' own claims are gone.
        self.assertEqual(self.usages,
                         {host: self.usage(host) for host in self.HOSTS})

    def give_back_after(self, competitor):
        """Run ``competitor()`` once, when the failed request is about to
        give its victims back."""
        pending = [competitor]
        real = give_back.on_host

        def on_host(*args):
            if pending:
                pending.pop()()
            return real(*args)
        self.stub_out('opie.nova.request.give_back.on_host', on_host)

    def test_victims_placement_could_not_take_back_get_it_later(self):
        # Placement fails while the failed request gives its victims back:
        # they hold nothing, run on, and their room is free.
        def placement_down():
            raise claim.ClaimError('POST /allocations: 503 Service '
                                   'Unavailable')
        real = give_back.on_host
        self.stub_out('opie.nova.request.give_back.on_host',
                      lambda *args: placement_down())

        servers = self.create(3, 'ERROR')
        self.assertIn('No valid host', servers[0]['fault']['message'])
        self.assertNotEqual(self.usages,
                            {host: self.usage(host) for host in self.HOSTS})
        self.stub_out('opie.nova.request.give_back.on_host', real)

        # Placement is back: the reconciler gives them their room back
        # rather than terminating them as victims left running.
        reconciler = self.scheduler.manager.reconciler
        context = nova_context.get_admin_context()
        now = timeutils.utcnow()
        self.assertEqual([], reconciler.run(context, now=now))
        self.assertEqual([], reconciler.run(context, now=now + (
            datetime.timedelta(seconds=CONF.opie.claimed_grace_period))))

        self.assertEqual(self.usages,
                         {host: self.usage(host) for host in self.HOSTS})
        self.assertEqual(self.names, sorted(
            set(self.live_names()) - {'big-1', 'big-2', 'big-3'}))
        self.assertEqual([], self.preempt_notifications())

    def test_victim_deleted_by_its_owner_gets_nothing_back(self):
        victim = self.server('PA0')['id']
        self.give_back_after(lambda: self._delete_server(self.server('PA0')))

        self.create(3, 'ERROR')

        self.assertEqual({}, self.placement.get(
            '/allocations/%s' % victim, version='1.28').body['allocations'])
        usage = self.usages['host-A']
        self.assertEqual(usage['CUSTOM_PREEMPTIBLE_VCPU'] - 2,
                         self.usage('host-A')['CUSTOM_PREEMPTIBLE_VCPU'])
        self.assertEqual(self.usages['host-B'], self.usage('host-B'))
        self.assertEqual([], self.preempt_notifications())

    def test_victims_whose_room_was_taken_are_terminated(self):
        taken = []

        def competitor():
            taken.append(self.boot('large', 'competitor'))
        self.give_back_after(competitor)

        self.create(3, 'ERROR')
        self.wait_for_terminations()

        # The competitor fitted in one host's freed room: those two
        # victims cannot come back; the other host's did.
        host = taken[0]['OS-EXT-SRV-ATTR:host']
        [notification] = self.preempt_notifications()
        self.assertEqual('room-taken', notification['payload']['reason'])
        self.assertEqual(host, notification['payload']['host'])
        self.assertEqual(sorted(['P%s0' % host[-1], 'P%s1' % host[-1]]),
                         sorted(set(self.names) - set(self.live_names())))
        self.assert_within_capacity()
