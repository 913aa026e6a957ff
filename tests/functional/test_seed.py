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

"""A seeded server is what a boot leaves (``OpieCloud.seed``): the fills
of the functional tests seed their servers, so every way a test meets
them is checked here against a server booted through the API."""
from nova import context as nova_context
from nova import objects

from opie.testing import cloud

# The API's fields that differ between any two servers.
OWN = {'id', 'name', 'links', 'created', 'updated', 'OS-SRV-USG:launched_at',
       'OS-EXT-SRV-ATTR:hostname', 'OS-EXT-SRV-ATTR:instance_name',
       'OS-EXT-SRV-ATTR:reservation_id'}


def servers_usage(usages):
    """A host's usages by servers (not its token's unit)."""
    return {rc: used for rc, used in usages.items()
            if used and rc != 'CUSTOM_OPIE_HOST'}


class Seeded(cloud.OpieCloud):

    def setUp(self):
        super().setUp()
        self.booted = self.boot('medium', 'booted', host='host-A',
                                preemptible=True, minutes=30)
        self.seeded = self.seed('medium', 'seeded', host='host-A',
                                preemptible=True, minutes=30)

    def test_the_api_shows_it_as_a_booted_one(self):
        booted, seeded = (self.api.get_server(s['id'])
                          for s in (self.booted, self.seeded))
        self.assertEqual({k: v for k, v in booted.items() if k not in OWN},
                         {k: v for k, v in seeded.items() if k not in OWN})
        self.assertEqual(('booted', 'seeded'), (booted['name'],
                                                seeded['name']))
        self.assertEqual(booted['OS-SRV-USG:launched_at'][:16],
                         seeded['OS-SRV-USG:launched_at'][:16])
        self.assertEqual(['create'], [
            a['action'] for a in self.api.get_instance_actions(
                seeded['id'])])

    def test_it_is_changed_since_before_it_as_a_booted_one(self):
        # Nova's changes-since and the instance cache's catch-up read
        # the rows updated since a time.
        since = self.api.get_server(self.booted['id'])['created']
        changed = {s['name'] for s in self.api.get_servers(
            search_opts={'changes-since': since})}
        self.assertEqual({'booted', 'seeded'}, changed)

    def test_it_shelves_unshelves_and_deletes_as_a_booted_one(self):
        for server in (self.seeded, self.booted):
            self._shelve_server(server)
        self.assertEqual({}, self.servers_usages())
        for server in (self.seeded, self.booted):
            self._unshelve_server(server)
            self._delete_server(server)
            self._wait_until_deleted(server)
        self.assertEqual({}, self.servers_usages())
        self.assertEqual({}, self.computes['host-A'].driver.instances)

    def servers_usages(self):
        """Every host's usages by servers, where it has any."""
        return {host: used for host in self.HOSTS for used in [
            servers_usage(self.usage(host))] if used}

    def test_placement_the_compute_and_the_request_spec_hold_it_alike(self):
        def allocation(server):
            body = self.placement.get('/allocations/%s' % server['id'],
                                      version='1.28').body
            return ({rp: a['resources']
                     for rp, a in body['allocations'].items()},
                    body['project_id'], body['user_id'])
        self.assertEqual(allocation(self.booted), allocation(self.seeded))
        compute = self.computes['host-A']
        self.assertEqual({self.booted['id'], self.seeded['id']},
                         set(compute.manager.rt.tracked_instances))
        self.assertEqual({self.booted['id'], self.seeded['id']},
                         set(compute.driver.instances))
        ctxt = nova_context.get_admin_context()
        booted, seeded = (objects.RequestSpec.get_by_instance_uuid(
            ctxt, s['id']) for s in (self.booted, self.seeded))
        for field in ('flavor', 'project_id', 'user_id', 'is_bfv'):
            self.assertEqual(
                booted.obj_to_primitive()['nova_object.data'][field],
                seeded.obj_to_primitive()['nova_object.data'][field], field)

    def test_deleted_it_leaves_no_usage(self):
        rp = self._get_provider_uuid_by_host('host-A')
        with_booted_only = None
        for server in (self.seeded, self.booted):
            self._delete_server(server)
            self._wait_until_deleted(server)
            if with_booted_only is None:
                with_booted_only = self._get_provider_usages(rp)
        self.assertEqual({'CUSTOM_PREEMPTIBLE_VCPU': 2,
                          'CUSTOM_PREEMPTIBLE_MEMORY_MB': 4000,
                          'CUSTOM_PREEMPTIBLE_DISK_GB': 40},
                         servers_usage(with_booted_only))
        self.assertEqual({}, servers_usage(self._get_provider_usages(rp)))
        self.assertEqual(set(), set(
            self.computes['host-A'].manager.rt.tracked_instances))
        self.assertEqual({}, self.computes['host-A'].driver.instances)
