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

"""Telling the victim's owner and the operator; shelve mode (acceptance
7 and 8)."""
from nova import exception
from nova import utils

from opie.nova.periodic import shelve_images
from opie.nova.request import terminate
from opie.testing import cloud
from opie.testing import harness


class OneHost(cloud.OpieCloud):
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
        self.assertEqual(server['id'], payload['instance_uuid'])
        self.assertEqual('large', payload['request']['flavor'])


class Shelve(OneHost):
    OPIE = {'termination_mode': 'shelve'}

    def setUp(self):
        self.flags(shelved_offload_time=0)
        super().setUp()
        # As Glance: only the image's owner deletes it, not a project it
        # is shared with (the tenants here have no admin role there).
        real = self.glance.delete

        def delete(context, image_id):
            image = self.glance.images.get(image_id, {})
            if image.get('properties', {}).get('owner') not in (
                    None, context.project_id):
                raise exception.ImageNotAuthorized(image_id=image_id)
            return real(context, image_id)
        self.stub_out('nova.image.glance.API.delete',
                      lambda api, context, image_id: delete(context,
                                                            image_id))

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

    def shelve_images(self):
        return [i['id'] for i in self.glance.images.values()
                if i['name'].endswith('-shelved')]

    def clean_snapshots(self):
        return shelve_images.clean(
            self.scheduler.manager.terminator.service_context())

    def test_snapshots_are_cleaned_once_no_longer_used(self):
        normal = self.boot('large', 'normal')
        self.wait_for_terminations()
        victim = self._wait_for_state_change(self.victims[0],
                                             'SHELVED_OFFLOADED')
        (image,) = self.shelve_images()
        # The server is shelved on it: kept.
        self.assertEqual([], self.clean_snapshots())

        self._delete_server(normal)
        self._wait_until_deleted(normal)
        self._unshelve_server(victim)
        self.assertEqual([image], self.clean_snapshots())

        # Shelved again, then deleted by its owner.
        self.boot('large', 'again')
        self.wait_for_terminations()
        shelved = [self._wait_for_state_change(v, 'SHELVED_OFFLOADED')
                   for v in self.victims
                   if self.api.get_server(v['id'])['status'] != 'ACTIVE']
        (image,) = self.shelve_images()
        self._delete_server(shelved[0])
        self.assertEqual([image], self.clean_snapshots())
        self.assertEqual([], self.shelve_images())

    def test_an_image_a_reset_server_still_points_at_is_kept(self):
        self.boot('large', 'normal')
        self.wait_for_terminations()
        victim = self._wait_for_state_change(self.victims[0],
                                             'SHELVED_OFFLOADED')
        (image,) = self.shelve_images()
        # An operator resets the server: it still needs its image.
        self.admin_api.post_server_action(
            victim['id'], {'os-resetState': {'state': 'error'}})

        self.assertEqual([], self.clean_snapshots())
        self.assertEqual([image], self.shelve_images())

    def test_an_image_that_cannot_be_deleted_stops_no_other(self):
        self.boot('large', 'normal')
        self.wait_for_terminations()
        self._wait_for_state_change(self.victims[0], 'SHELVED_OFFLOADED')
        (image,) = self.shelve_images()
        # A protected image of the same kind, listed first.
        protected = dict(self.glance.images[image], id='protected-1')
        self.glance.images = {'protected-1': protected,
                              **self.glance.images}
        self._delete_server(self.victims[0])
        deleting = self.glance.delete

        def delete(context, image_id):
            if image_id == 'protected-1':
                raise exception.ImageDeleteConflict(reason='protected')
            return deleting(context, image_id)
        self.stub_out('nova.image.glance.API.delete',
                      lambda api, context, image_id: delete(context,
                                                            image_id))

        self.assertEqual([image], self.clean_snapshots())

    def test_a_service_user_refused_later_still_frees_the_room(self):
        def refused(auth, session):
            raise exception.Unauthorized()
        self.stub_out('opie.testing.harness.ServiceUser.get_access',
                      refused)

        self.boot('large', 'normal')
        self.wait_for_terminations()

        # Deleted instead of shelved: the normal server's room is real.
        self._wait_until_deleted(self.victims[0])
        self.assert_within_capacity()

    def test_the_snapshot_is_uploaded_with_the_service_users_token(self):
        # Only a context's auth_token travels over RPC to the compute,
        # whose Glance client uploads the snapshot with it.
        tokens, catalogs = [], []
        real = self.DRIVER.snapshot

        def snapshot(driver, context, instance, image_id, update_task_state):
            tokens.append(context.auth_token)
            catalogs.append(context.get_auth_plugin().get_endpoint(
                None, service_type='image', interface='public'))
            return real(driver, context, instance, image_id,
                        update_task_state)
        self.stub_out('nova.virt.fake.%s.snapshot' % self.DRIVER.__name__,
                      snapshot)

        self.boot('large', 'normal')
        self.wait_for_terminations()
        self._wait_for_state_change(self.victims[0], 'SHELVED_OFFLOADED')

        self.assertEqual([harness.ServiceUser.TOKEN], tokens)
        # With the catalog in the form Nova reads (keystone v2's).
        self.assertEqual(['http://glance.test/'], catalogs)

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
