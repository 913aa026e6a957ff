"""Telling the victim's owner and the operator; shelve mode (acceptance
7 and 8)."""
from nova import utils

from opie.nova import terminate
from tests.functional import base


class OneHost(base.OpieCloud):
    """One host full of a tenant's preemptibles (booted by a non-admin)."""
    HOSTS = ('host-A',)

    def setUp(self):
        super().setUp()
        self.owner = self.api_fixture.api
        self.owner.microversion = 'latest'
        self.victims = []
        for i, minutes in enumerate((75, 140)):
            server = self.boot('large', 'P%d' % i, preemptible=True,
                               api=self.owner)
            self.set_launched_at(server['id'], minutes)
            self.victims.append(server)


class Notify(OneHost):

    def test_owner_reads_action_and_operator_gets_notification(self):
        server = self.boot('large', 'normal')
        self.wait_for_terminations()
        victim = self.victims[0]
        self._wait_until_deleted(victim)

        with utils.temporary_mutation(self.owner, microversion='2.21'):
            actions = self.owner.api_get(
                '/servers/%s/os-instance-actions' % victim['id']
            ).body['instanceActions']
        self.assertIn(terminate.ACTION, [a['action'] for a in actions])

        [notification] = self.preempt_notifications()
        self.assertEqual('INFO', notification['priority'])
        payload = notification['payload']
        self.assertEqual('host-A', payload['host'])
        self.assertEqual('delete', payload['mode'])
        self.assertEqual([victim['id']],
                         [v['uuid'] for v in payload['victims']])
        self.assertTrue(payload['victims'][0]['terminated'])
        self.assertAlmostEqual(15 * 60, payload['cost'], delta=60)
        self.assertEqual(server['id'], payload['request']['instance_uuid'])
        self.assertEqual('large', payload['request']['flavor'])


class Shelve(OneHost):
    OPIE = {'termination_mode': 'shelve'}

    def setUp(self):
        self.flags(shelved_offload_time=0)
        super().setUp()

    def test_victim_is_shelved_tagged_and_can_be_unshelved(self):
        normal = self.boot('large', 'normal')
        self.wait_for_terminations()
        victim = self._wait_for_state_change(self.victims[0],
                                             'SHELVED_OFFLOADED')

        self.assertIn('opie-preempted',
                      self.owner.get_server_tags(victim['id']))
        self.assertEqual(['P0', 'P1', 'normal'], self.live_names())
        self.assert_within_capacity()

        self._delete_server(normal)
        self._wait_until_deleted(normal)
        unshelved = self._unshelve_server(victim)
        self.assertEqual('host-A', unshelved['OS-EXT-SRV-ATTR:host'])
        self.assert_within_capacity()

    def test_victim_is_shelved_without_a_clean_shutdown(self):
        # The new server may start as soon as the victim's room is given:
        # the victim must not take shutdown_timeout to stop beside it.
        timeouts = []
        real = self.DRIVER.power_off

        def power_off(driver, instance, timeout=0, retry_interval=0):
            timeouts.append(timeout)
            return real(driver, instance, timeout, retry_interval)
        self.stub_out('nova.virt.fake.%s.power_off' % self.DRIVER.__name__,
                      power_off)

        self.boot('large', 'normal')
        self.wait_for_terminations()
        self._wait_for_state_change(self.victims[0], 'SHELVED_OFFLOADED')

        self.assertEqual({0}, set(timeouts))
