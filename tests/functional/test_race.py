"""Two scheduler workers after the same victims (acceptance 6).

A hook runs the competitor deterministically between the moment the
scheduler has chosen its victims and the moment it claims the first one.
"""
from oslo_utils import uuidutils

from nova import context as nova_context

from opie.nova import claim
from tests.functional import base
from tests.functional import test_preemption


class Race(base.OpieCloud):

    def before_first_claim(self, competitor):
        """Run ``competitor()`` just before the scheduler's first claim
        of a victim (with its instance or alone)."""
        pending = [competitor]

        def hook(real):
            def hooked(*args):
                if pending:
                    pending.pop()()
                return real(*args)
            return hooked
        for name in ('claim', 'claim_together'):
            self.stub_out('opie.nova.claim.' + name,
                          hook(getattr(claim, name)))

    def server(self, name):
        return [s for s in self.api.get_servers() if s['name'] == name][0]

    def test_competing_request_takes_the_victim_first(self):
        test_preemption.fill_with_preemptibles(self)
        self.preemptibles = self.live_names()
        # Both requests want B-2 (the cheapest); the competitor gets it.
        self.before_first_claim(lambda: self.boot('medium', 'competitor'))

        server = self.boot('medium', 'first')
        self.wait_for_terminations()

        self.assertEqual('host-B', server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual('host-B', self.host_of(self.server('competitor')))
        # The first request found B-2 taken, read host-B again and took
        # the next cheapest, B-3; every victim went once.
        victims = [v['uuid'] for n in self.preempt_notifications()
                   for v in n['payload']['victims']]
        self.assertEqual(len(victims), len(set(victims)))
        self.assertEqual(sorted(set(self.preemptibles) - {'B-2', 'B-3'}
                                | {'competitor', 'first'}),
                         self.live_names())
        self.assert_within_capacity()

    def test_room_lost_fails_request_and_terminates_nothing(self):
        self.boot('large', 'NL', host='host-B')
        self.boot('medium', 'NM', host='host-B')
        p1 = self.boot('medium', 'P1', host='host-B', preemptible=True,
                       minutes=10)
        for i in range(2):
            self.boot('large', 'A%d' % i, host='host-A')
        rp = self._get_provider_uuid_by_host('host-B')

        def competitor():
            # Another worker claims P1 and a preemptible it placed at the
            # same moment takes P1's room.
            self.assertIsNotNone(claim.claim(
                self.scheduler.manager.placement_client,
                nova_context.get_admin_context(), p1['id']))
            self.placement.put(
                '/allocations/%s' % uuidutils.generate_uuid(),
                {'allocations': {rp: {'resources': {
                    'CUSTOM_PREEMPTIBLE_VCPU': 2,
                    'CUSTOM_PREEMPTIBLE_MEMORY_MB': 4000,
                    'CUSTOM_PREEMPTIBLE_DISK_GB': 40}}},
                 'consumer_generation': None,
                 'project_id': p1['tenant_id'], 'user_id': p1['user_id']},
                version='1.28')
        self.before_first_claim(competitor)

        server = self.boot('medium', 'first', expected_state='ERROR')

        self.assertIn('taken by a concurrent request',
                      server['fault']['message'])
        self.assertEqual([], self.preempt_notifications())
        self.assertEqual({'VCPU': 6, 'MEMORY_MB': 12000, 'DISK_GB': 120,
                          'CUSTOM_PREEMPTIBLE_VCPU': 2,
                          'CUSTOM_PREEMPTIBLE_MEMORY_MB': 4000,
                          'CUSTOM_PREEMPTIBLE_DISK_GB': 40},
                         self.usage('host-B'))
        self.assert_within_capacity()
