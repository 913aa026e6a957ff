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

"""A flavor marked preemptible without its ``resources:`` overrides is a
normal flavor to the scheduler (issue 23).

Placement charges its servers to the standard classes, where OPIE counts
normal servers; had the scheduler also listed them as preemptible, their
room would count twice and a normal request would take an extra victim.
"""
import fixtures

from opie.core import contract
from opie.core import preemptible
from opie.nova import flavor_check
from opie.testing import cloud

WARNING = 'flavor marked.medium is marked opie:preemptible=true but'


class MarkedWithoutOverrides(cloud.OpieCloud):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatchObject(
            flavor_check, '_VERDICTS', {}))
        self.marked = self._create_flavor(
            name='marked.medium', vcpu=2, memory_mb=4000, disk=40,
            ephemeral=0, extra_spec={contract.PREEMPTIBLE_SPEC: 'true'})

    def test_its_server_is_normal_and_costs_no_extra_victim(self):
        # host-A: the marked server (dearest: 59 minutes into its hour)
        # and three preemptible mediums; host-B: full of normal servers.
        marked = self._create_server(
            name='marked', flavor_id=self.marked, networks='none',
            host='host-A')
        self.normal_servers.add(marked['id'])
        self.set_launched_at(marked['id'], 59)
        for i, minutes in enumerate((70, 80, 90)):
            self.boot('medium', 'A-%d' % i, host='host-A',
                      preemptible=True, minutes=minutes)
        for i in range(2):
            self.boot('large', 'B-%d' % i, host='host-B')

        self.boot('medium', 'normal')
        self.wait_for_terminations()

        # One medium frees the room a medium needs: the marked server
        # counts once, as the normal server Placement says it is.
        self.assertEqual(1, len(self.victim_uuids()))
        self.assertEqual(['A-1', 'A-2', 'B-0', 'B-1', 'marked', 'normal'],
                         self.live_names())
        self.assertEqual('host-A', self.host_of(self.server('normal')))
        self.assert_within_capacity()
        self.assertEqual(1, self.stdlog.logger.output.count(WARNING))

    def test_its_request_is_a_normal_request(self):
        for host in self.HOSTS:
            for i in range(4):
                self.boot('medium', '%s-%d' % (host[-1], i), host=host,
                          preemptible=True, minutes=61 + i)

        # A preemptible request would get no valid host; this one preempts.
        marked = self._create_server(
            name='marked', flavor_id=self.marked, networks='none')
        self.normal_servers.add(marked['id'])
        self.wait_for_terminations()

        self.assertEqual(1, len(self.victim_uuids()))
        self.assertEqual({'VCPU': 2, 'MEMORY_MB': 4000, 'DISK_GB': 40},
                         {rc: self.usage(self.host_of(marked))[rc]
                          for rc in preemptible.STANDARD})
        self.assert_within_capacity()
        self.assertEqual(1, self.stdlog.logger.output.count(WARNING))
