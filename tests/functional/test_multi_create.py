"""Multi-create: victims on several hosts, all or nothing (acceptance 5)."""
from opie.nova import manager
from tests.functional import base


class MultiCreate(base.OpieCloud):
    """Each host: one normal large server and two medium preemptibles, so
    a large server fits once per host, after two preemptions there."""

    def setUp(self):
        super().setUp()
        for host in self.HOSTS:
            self.boot('large', 'normal-' + host[-1], host=host)
            for i, minutes in enumerate((70, 130)):
                self.boot('medium', 'P%s%d' % (host[-1], i), host=host,
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
        notifications = self.preempt_notifications()
        victims = [v['uuid'] for n in notifications
                   for v in n['payload']['victims']]
        self.assertEqual(4, len(set(victims)))
        self.assertEqual(['host-A', 'host-B'],
                         sorted(n['payload']['host'] for n in notifications))
        self.assert_within_capacity()

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
        real = manager._give_back_on_host

        def give_back(*args):
            if pending:
                pending.pop()()
            return real(*args)
        self.stub_out('opie.nova.manager._give_back_on_host', give_back)

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
        self.assertEqual('room-taken',
                         notification['payload']['request']['reason'])
        self.assertEqual(host, notification['payload']['host'])
        self.assertEqual(sorted(['P%s0' % host[-1], 'P%s1' % host[-1]]),
                         sorted(set(self.names) - set(self.live_names())))
        self.assert_within_capacity()
