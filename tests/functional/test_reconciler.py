"""The reconciler repairs h_f overcommit and terminates claimed victims
left running, each after its grace period."""
import datetime

import fixtures
from oslo_utils import timeutils

import nova.conf
from nova import context as nova_context

from opie.nova import claim
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

    def server(self, name):
        return [s for s in self.api.get_servers() if s['name'] == name][0]

    def test_overcommitted_host_is_repaired_after_grace_period(self):
        # A normal and a preemptible request placed at once by two
        # workers: emulated by a scheduler that makes no room.
        self.stub_out('opie.nova.manager.OpieSchedulerManager._make_room',
                      lambda *args: None)
        self.stub_out(
            'opie.nova.manager.ClaimingClient._claim_with_victims',
            lambda *args: False)
        self.boot('medium', 'normal', host='host-A')
        usage = self.usage('host-A')
        self.assertEqual(10, usage['VCPU'] + usage['CUSTOM_PREEMPTIBLE_VCPU'])

        self.assertTrue(self.manager._is_leader(self.context))
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

    def test_claimed_victim_left_running_is_terminated(self):
        # A scheduler worker claimed B-2 and died before terminating it.
        b2, b3 = self.server('B-2')['id'], self.server('B-3')['id']
        self.assertIsNotNone(claim.claim(self.manager.placement_client,
                                         self.context, b2))
        claims = self.useFixture(fixtures.MockPatch(
            'opie.nova.claim.claim_together',
            wraps=claim.claim_together)).mock

        # B-2's room is free for everyone and B-2 is no candidate: a large
        # server needs one more victim on host-B, the cheapest left (B-3,
        # 20 minutes; host-A would need two).
        self.boot('large', 'normal')
        self.wait_for_terminations()

        [call] = claims.call_args_list
        self.assertEqual([b3], call.args[5])
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
