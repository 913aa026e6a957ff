"""The reconciler repairs h_f overcommit after a grace period."""
import datetime

from oslo_utils import timeutils

from nova import context as nova_context

from tests.functional import base
from tests.functional import test_preemption


class Reconciler(base.OpieCloud):

    def test_overcommitted_host_is_repaired_after_grace_period(self):
        test_preemption.fill_with_preemptibles(self)
        preemptibles = self.live_names()
        # A normal and a preemptible request placed at once by two
        # workers: emulated by a scheduler that makes no room.
        self.stub_out('opie.nova.manager.OpieSchedulerManager._make_room',
                      lambda *args: None)
        self.boot('medium', 'normal', host='host-A')
        usage = self.usage('host-A')
        self.assertEqual(10, usage['VCPU'] + usage['CUSTOM_PREEMPTIBLE_VCPU'])

        manager = self.scheduler.manager
        context = nova_context.get_admin_context()
        now = timeutils.utcnow()
        self.assertTrue(manager._is_leader(context))
        self.assertEqual([], manager.reconciler.run(context, now=now))
        self.assertEqual([], self.preempt_notifications())

        later = now + datetime.timedelta(seconds=120)
        [preemption] = manager.reconciler.run(context, now=later)

        # host-A's cheapest: A-0 (31 minutes).
        self.assertEqual('host-A', preemption.host)
        self.assertEqual(sorted(set(preemptibles) - {'A-0'} | {'normal'}),
                         self.live_names())
        self.assert_within_capacity()
        self.assertEqual([], manager.reconciler.run(context, now=later))
        [notification] = self.preempt_notifications()
        self.assertEqual('reconcile',
                         notification['payload']['request']['reason'])
