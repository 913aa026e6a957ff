"""The reconciler repairs h_f overcommit and terminates claimed victims
left running, each after its grace period; one process holds its lease,
and one overcommit is repaired once."""
import datetime
import os

from oslo_utils import timeutils

import nova.conf
from nova import context as nova_context

from opie.nova import claim
from opie.nova import lease
from tests.functional import base
from tests.functional import test_preemption

CONF = nova.conf.CONF


class Reconciler(base.OpieCloud):

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
        self.stub_out('opie.nova.plan.Plan.record_of',
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
        self.assertEqual('reconcile',
                         notification['payload']['request']['reason'])

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
        b2, b3 = self.server('B-2')['id'], self.server('B-3')['id']
        rp = self._get_provider_uuid_by_host('host-B')
        client = self.manager.placement_client
        self.assertIsNotNone(claim.write(
            client, self.context, rp,
            claim.read_token(client, self.context, rp),
            {b2: claim.emptied(claim.read_victim(client, self.context,
                                                 b2))}))

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
        reasons = [n['payload']['request'].get('reason')
                   for n in self.preempt_notifications()]
        self.assertEqual([None, 'claimed'], reasons)


class Lease(base.OpieCloud):
    """Two scheduler processes (any hosts, any workers): one reconciles."""

    def setUp(self):
        super().setUp()
        self.context = nova_context.get_admin_context()
        self.now = [0.0]
        clock = lambda: self.now[0]  # noqa: E731
        client = self.scheduler.manager.placement_client
        self.first = lease.Lease(client, 'sched-1', 30, clock)
        self.second = lease.Lease(client, 'sched-2', 30, clock)

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
        third = lease.Lease(self.scheduler.manager.placement_client,
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
        worker = lease.Lease(self.scheduler.manager.placement_client,
                             'sched-1', 30, lambda: self.now[0])
        parent = worker.name
        self.assertTrue(worker.acquire(self.context))
        # This process is now a forked worker: the parent made the name.
        worker._named = (os.getpid() + 1, parent)

        self.assertNotEqual(parent, worker.name)
        self.assertFalse(worker.acquire(self.context))
