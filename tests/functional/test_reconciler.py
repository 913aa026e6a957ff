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

"""The reconciler repairs h_f overcommit and terminates claimed victims
left running, each after its grace period; one process holds its lease,
and one overcommit is repaired once."""
import datetime
import io
import os
from unittest import mock

import fixtures
from oslo_utils import timeutils

from nova.cmd import manage
import nova.conf
from nova import context as nova_context
from nova import objects

from opie.nova.periodic import leader
from opie.testing import cloud
from tests.functional import test_preemption

CONF = nova.conf.CONF


class Reconciler(cloud.OpieCloud):

    def setUp(self):
        super().setUp()
        test_preemption.fill_with_preemptibles(self)
        self.preemptibles = self.live_names()
        self.manager = self.scheduler.manager
        self.context = nova_context.get_admin_context()
        self.now = timeutils.utcnow()

    def overcommit(self, host):
        """A normal server placed by a write without the host token (as
        Nova's own report client writes): ``host`` is over capacity."""
        self.stub_out('opie.nova.request.plan.Plan.record_of',
                      lambda plan, allocations: None)
        self.boot('medium', 'normal', host=host)

    def test_overcommitted_host_is_repaired_after_grace_period(self):
        self.overcommit('host-A')
        usage = self.usage('host-A')
        self.assertEqual(10, usage['VCPU'] + usage['CUSTOM_PREEMPTIBLE_VCPU'])

        self.assertEqual([], self.manager.reconciler.run(self.context,
                                                         now=self.now))
        self.assertEqual([], self.preempt_notifications())

        later = self.now + datetime.timedelta(
            seconds=CONF.opie.reconcile_grace_period)
        [preemption] = self.manager.reconciler.run(self.context, now=later)

        # host-A's cheapest: A-0 (31 minutes).
        self.assertEqual('host-A', preemption.host)
        self.assertEqual(sorted(set(self.preemptibles) - {'A-0'}
                                | {'normal'}), self.live_names())
        self.assert_within_capacity()
        self.assertEqual([], self.manager.reconciler.run(self.context,
                                                         now=later))
        [notification] = self.preempt_notifications()
        self.assertEqual('reconcile', notification['payload']['reason'])

    def test_two_reconcilers_repair_one_overcommit_once(self):
        self.overcommit('host-A')
        a0 = self.server('A-0')['id']
        other = self.other_worker().reconciler
        later = self.now + datetime.timedelta(
            seconds=CONF.opie.reconcile_grace_period)
        for reconciler in (self.manager.reconciler, other):
            reconciler.run(self.context, now=self.now)
        repairs = []
        # The other reconciler repairs host-A between this one's read of
        # the host and its write.
        self.before_write(
            lambda: repairs.extend(other.run(self.context, now=later)))

        repairs.extend(self.manager.reconciler.run(self.context, now=later))

        self.assertEqual(1, len(repairs))
        self.assertEqual([a0], self.victim_uuids())
        self.assert_within_capacity()

    def test_claimed_victim_left_running_is_terminated(self):
        # A scheduler worker took B-2 and died before terminating it.
        b2 = self.claim_without_terminating('B-2', 'host-B')
        b3 = self.server('B-3')['id']

        # B-2's room is free for everyone and B-2 is no candidate: a large
        # server needs one more victim on host-B, the cheapest left (B-3,
        # 20 minutes; host-A would need two).
        self.boot('large', 'normal')
        self.wait_for_terminations()

        self.assertEqual([b3], self.victim_uuids())
        self.assertEqual(sorted(set(self.preemptibles) - {'B-3'}
                                | {'normal'}), self.live_names())

        reconciler = self.manager.reconciler
        self.assertEqual([], reconciler.run(self.context, now=self.now))
        later = self.now + datetime.timedelta(
            seconds=CONF.opie.claimed_grace_period)
        [preemption] = reconciler.run(self.context, now=later)

        self.assertEqual('host-B', preemption.host)
        self.assertEqual([b2], [v.uuid for v in preemption.victims])
        self.assertEqual(sorted(set(self.preemptibles) - {'B-2', 'B-3'}
                                | {'normal'}), self.live_names())
        self.assert_within_capacity()
        self.assertEqual([], reconciler.run(self.context, now=later))
        reasons = [n['payload']['reason']
                   for n in self.preempt_notifications()]
        self.assertEqual(['request', 'claimed'], reasons)

    def test_a_pass_that_outlives_its_lease_stops_before_it_acts(self):
        b2 = self.claim_without_terminating('B-2', 'host-B')
        # Its room is taken: B-2 must go.
        self.boot('medium', 'normal', host='host-B')
        clock = [0.0]
        client = self.manager.placement_client
        first = leader.Leadership(client, 'sched-1', 30, lambda: clock[0])
        second = leader.Leadership(client, 'sched-2', 30, lambda: clock[0])
        other = self.other_worker().reconciler
        self.assertTrue(first.acquire(self.context))
        self.assertFalse(second.acquire(self.context))
        # Both have seen B-2 claimed (the second when it held the lease).
        for reconciler in (self.manager.reconciler, other):
            self.assertEqual([], reconciler.run(self.context, now=self.now))
        later = self.now + datetime.timedelta(
            seconds=CONF.opie.claimed_grace_period)
        terminate = self.useFixture(fixtures.MockPatchObject(
            self.manager.terminator, 'terminate',
            wraps=self.manager.terminator.terminate)).mock
        # The first holder's pass stalls after it decided, past its lease:
        # the second takes the lease over and does a pass of its own.
        real = self.manager.reconciler._claimed
        others = []

        def stalled(*args):
            decided = real(*args)
            clock[0] += 30
            self.assertTrue(second.acquire(self.context))
            others.extend(other.run(self.context, now=later, renew=lambda:
                                    second.acquire(self.context)))
            return decided
        self.stub_out_attr(self.manager.reconciler, '_claimed', stalled)

        mine = self.manager.reconciler.run(
            self.context, now=later, renew=lambda: first.acquire(
                self.context))

        self.assertEqual([], mine)
        self.assertEqual(0, terminate.call_count)
        self.assertEqual([[b2]], [[v.uuid for v in p.victims]
                                  for p in others])
        self.assertEqual(1, self.preempt_actions(b2))
        self.assertEqual([b2], self.victim_uuids())

    def test_a_holder_killed_between_its_repair_and_the_kill(self):
        self.overcommit('host-A')
        a0 = self.server('A-0')['id']
        later = self.now + datetime.timedelta(
            seconds=CONF.opie.reconcile_grace_period)
        self.manager.reconciler.run(self.context, now=self.now)
        self.stub_out_attr(self.manager.terminator, 'terminate',
                           mock.Mock(side_effect=SystemExit))

        # The repair is written, then the process dies.
        self.assertRaises(SystemExit, self.manager.reconciler.run,
                          self.context, now=later)
        self.assert_within_capacity()
        self.assertEqual(0, self.preempt_actions(a0))

        # The next holder finds A-0 claimed and never terminated.
        other = self.other_worker().reconciler
        self.assertEqual([], other.run(self.context, now=later))
        [preemption] = other.run(self.context, now=later + datetime.timedelta(
            seconds=CONF.opie.claimed_grace_period))
        self.assertEqual([a0], [v.uuid for v in preemption.victims])
        self.assertEqual(1, self.preempt_actions(a0))

    def test_heal_allocations_while_a_victim_is_claimed(self):
        # The scheduler took B-2 (5 minutes) and has not terminated it yet
        # when an operator heals allocations: B-2 holds its room again, on
        # the host whose room a normal server took.
        b2 = self.server('B-2')
        deferred = self.defer_terminations()
        self.boot('medium', 'normal')
        [(preemptions, info)] = deferred
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', io.StringIO()))
        manage.PlacementCommands().heal_allocations(instance_uuid=b2['id'])
        usage = self.usage('host-B')
        self.assertEqual(10, usage['VCPU'] + usage['CUSTOM_PREEMPTIBLE_VCPU'])

        # Its room is still needed: it is terminated, and its allocations
        # go with it.
        [preemption] = self.manager.terminator.terminate(preemptions, info)

        self.assertEqual([b2['id']], [v.uuid for v in preemption.victims])
        self._wait_until_deleted(b2)
        self.assert_within_capacity()
        self.assertEqual(1, self.preempt_actions(b2['id']))

    def test_a_claimed_victim_whose_room_is_free_gets_it_back(self):
        # Taken, then its request failed and Placement refused the give
        # back, or its worker died before either: nobody needs its room.
        b2 = self.claim_without_terminating('B-2', 'host-B')
        usage = self.usage('host-B')
        reconciler = self.manager.reconciler
        self.assertEqual([], reconciler.run(self.context, now=self.now))
        self.assertEqual([], reconciler.run(
            self.context, now=self.now + datetime.timedelta(
                seconds=CONF.opie.claimed_grace_period)))

        self.assertEqual(2, self.usage('host-B')['CUSTOM_PREEMPTIBLE_VCPU']
                         - usage['CUSTOM_PREEMPTIBLE_VCPU'])
        self.assertEqual(self.preemptibles, self.live_names())
        self.assertEqual(0, self.preempt_actions(b2))
        self.assert_within_capacity()

    def stub_out_attr(self, obj, name, value):
        self.useFixture(fixtures.MockPatchObject(obj, name, value))


class ForcedMoves(cloud.OpieCloud):
    """A move an admin forces to a host bypasses the scheduler: Placement
    takes it where h_n has room, whatever h_f says. The compute node
    record's allocation ratio may differ from Placement's (ratios managed
    through the Placement API, or the initial ones before the compute's
    first periodic): the reconciler believes Placement."""

    def setUp(self):
        super().setUp()
        for i, minutes in enumerate((91, 152, 213, 274)):
            self.seed('medium', 'A-%d' % i, 'host-A', preemptible=True,
                      minutes=minutes)
        self.a0 = self.server('A-0')['id']
        self.mover = self.boot('medium', 'mover', host='host-B')
        self.context = nova_context.get_admin_context()
        self.now = timeutils.utcnow()

        # host-A's record says twice the room Placement gives it.
        node = objects.ComputeNode.get_by_host_and_nodename(
            self.context, 'host-A', 'host-A')
        node.cpu_allocation_ratio = node.ram_allocation_ratio = 2.0
        node.save()

    def assert_repaired(self):
        self.assertEqual(10, sum(self.usage('host-A').get(rc, 0) for rc in
                                 ('VCPU', 'CUSTOM_PREEMPTIBLE_VCPU')))
        reconciler = self.scheduler.manager.reconciler
        self.assertEqual([], reconciler.run(self.context, now=self.now))
        [repair] = reconciler.run(self.context, now=self.now + (
            datetime.timedelta(seconds=CONF.opie.reconcile_grace_period)))
        # The cheapest on host-A: A-0 (31 minutes).
        self.assertEqual([self.a0],
                         [v.uuid for v in repair.victims])
        self.assert_within_capacity()
        self.assertEqual('host-A', self.host_of(self.mover))

    def forced(self, microversion, action):
        """Post ``action`` at the last ``microversion`` that can force."""
        self.api.microversion = microversion
        try:
            self.api.post_server_action(self.mover['id'], action)
        finally:
            self.api.microversion = 'latest'

    def test_a_forced_live_migration_onto_a_full_host(self):
        self.forced('2.30', {'os-migrateLive': {
            'host': 'host-A', 'block_migration': 'auto', 'force': True}})
        self._wait_for_migration_status(self.mover, ['completed'])
        self.assert_repaired()

    def test_a_forced_evacuation_onto_a_full_host(self):
        self.computes['host-B'].stop()
        self.api.put_service_force_down(
            self.api.get_services(host='host-B',
                                  binary='nova-compute')[0]['id'], True)
        self.forced('2.29', {'evacuate': {'host': 'host-A',
                                          'force': True}})
        self._wait_for_migration_status(self.mover, ['done'])
        self.assert_repaired()


class Leadership(cloud.OpieCloud):
    """Two scheduler processes (any hosts, any workers): one reconciles."""

    def setUp(self):
        super().setUp()
        self.context = nova_context.get_admin_context()
        self.now = [0.0]
        clock = lambda: self.now[0]  # noqa: E731
        client = self.scheduler.manager.placement_client
        self.first = leader.Leadership(client, 'sched-1', 30, clock)
        self.second = leader.Leadership(client, 'sched-2', 30, clock)

    def test_one_holder_until_it_stops_renewing(self):
        self.assertTrue(self.first.acquire(self.context))
        for _ in range(3):
            self.now[0] += 20
            self.assertFalse(self.second.acquire(self.context))
            self.assertTrue(self.first.acquire(self.context))

        # The first holder dies: after ttl without a renewal, the second
        # takes the lease, and the first cannot renew it any more.
        self.assertFalse(self.second.acquire(self.context))
        self.now[0] += 30
        self.assertTrue(self.second.acquire(self.context))
        self.assertFalse(self.first.acquire(self.context))

    def test_two_takers_of_an_expired_lease_one_wins(self):
        self.assertTrue(self.first.acquire(self.context))
        third = leader.Leadership(self.scheduler.manager.placement_client,
                                  'sched-3', 30, lambda: self.now[0])
        for contender in (self.second, third):
            self.assertFalse(contender.acquire(self.context))
        self.now[0] += 30
        # Both see the same expired generation; the second writes first
        # (inside the third's turn, between its read and its write).
        won = []
        real = self.second.acquire
        self.before_lease_write(third, lambda: won.append(real(
            self.context)))

        won.append(third.acquire(self.context))

        self.assertEqual([True, False], won)

    def before_lease_write(self, holder, competitor):
        real = holder._write

        def write(*args):
            competitor()
            return real(*args)
        holder._write = write

    def test_forked_workers_hold_it_under_names_of_their_own(self):
        # Nova creates the manager, and its lease, before it forks the
        # workers of one scheduler service: same host, same object.
        worker = leader.Leadership(self.scheduler.manager.placement_client,
                                   'sched-1', 30, lambda: self.now[0])
        parent = worker.name
        self.assertTrue(worker.acquire(self.context))
        # This process is now a forked worker: the parent made the name.
        worker._named = (os.getpid() + 1, parent)

        self.assertNotEqual(parent, worker.name)
        self.assertFalse(worker.acquire(self.context))


class IdlePass(cloud.OpieCloud):
    """What one reconcile pass costs Placement on a cloud where nothing
    happened (the lease holder's load, documented in the design)."""
    HOSTS = ('host-A', 'host-B', 'host-C')

    def test_three_requests_per_node(self):
        for host in self.HOSTS:
            self.boot('small', 'p' + host, host=host, preemptible=True)
        calls = []
        self.count_placement_calls(calls)

        self.scheduler.manager.reconciler.run(
            nova_context.get_admin_context())

        # Per node: inventories and usages (overcommit), allocations
        # (claimed victims); the preemption budgets' ledgers (none).
        self.assertEqual(3 * len(self.HOSTS) + 1, len(calls), calls)
