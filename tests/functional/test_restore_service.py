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

"""Restoring a normal server's service on a cloud full of preemptibles.

Evacuate and unshelve may preempt by default (``[opie] preempt_on_move``):
a normal server comes back even when only preemptible instances fill the
cloud, which is the steady state OPIE aims for.
"""
from opie.testing import cloud
from tests.functional import test_preemption


class Unshelve(cloud.OpieCloud):

    def setUp(self):
        self.flags(shelved_offload_time=0)
        super().setUp()

    def test_unshelve_preempts_on_a_full_cloud(self):
        server = self.boot('medium', 'service', host='host-A')
        self._shelve_server(server)
        test_preemption.fill_with_preemptibles(self)
        b2 = self.server('B-2')['id']

        unshelved = self._unshelve_server(server)
        self.wait_for_terminations()

        self.assertEqual('host-B', unshelved['OS-EXT-SRV-ATTR:host'])
        self.assertEqual([b2], self.victim_uuids())
        self.assertEqual(1, self.preempt_actions(b2))
        self.assert_within_capacity()


class Evacuate(cloud.OpieCloud):
    HOSTS = ('host-A', 'host-B', 'host-C')

    def setUp(self):
        super().setUp()
        self.service = self.boot('medium', 'service', host='host-C')
        test_preemption.fill_with_preemptibles(self)

    def fail_host_c(self):
        self.computes['host-C'].stop()
        [service] = self.admin_api.get_services(host='host-C',
                                                binary='nova-compute')
        self.admin_api.put_service_force_down(service['id'], True)

    def test_evacuate_preempts_on_a_full_cloud(self):
        server = self.service
        b2 = self.server('B-2')['id']
        self.fail_host_c()

        evacuated = self._evacuate_server(server)
        self.wait_for_terminations()

        self.assertEqual('host-B', evacuated['OS-EXT-SRV-ATTR:host'])
        self.assertEqual([b2], self.victim_uuids())
        self.assert_within_capacity()
        # The source keeps its allocations until host-C comes back.
        self.assertEqual(2, self.usage('host-C')['VCPU'])

    def test_evacuate_whose_victim_is_taken_keeps_its_source(self):
        b2, b3 = self.server('B-2')['id'], self.server('B-3')['id']
        self.fail_host_c()
        other = self.other_worker()

        def competitor():
            with self.served_by(other):
                self.boot('medium', 'competitor')
        # Another worker takes B-2 between the evacuation's decision and
        # its write: the write is refused, host-B is read again.
        self.before_write(competitor)

        evacuated = self._evacuate_server(self.service)
        self.wait_for_terminations()

        self.assertEqual('host-B', evacuated['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(sorted([b2, b3]), sorted(self.victim_uuids()))
        self.assert_within_capacity()
        self.assertEqual(2, self.usage('host-C')['VCPU'])
