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

"""Moves preempt only where ``[opie] preempt_on_move`` allows it."""
from nova.tests.functional.api import client

from opie.testing import cloud


class ColdMigrate(cloud.OpieCloud):
    """host-A: the server to move; host-B: full of preemptibles."""

    def setUp(self):
        super().setUp()
        self.server = self.boot('medium', 'mover', host='host-A')
        for i in range(4):
            self.seed('medium', 'P%d' % i, host='host-B', preemptible=True,
                      minutes=61 + i)
        self.names = self.live_names()


class MigrateMayNotPreempt(ColdMigrate):

    def test_migration_to_full_host_is_refused(self):
        # The API casts to the conductor (202); the harness makes casts
        # calls, so the conductor's NoValidHost reaches the API as a 500.
        self.assertRaises(client.OpenStackApiException,
                          self._migrate_server, self.server)

        self.assertIn('No valid host found for cold migrate',
                      self.stdlog.logger.output)
        self.assertEqual('host-A', self.host_of(self.server))
        self.assertEqual(self.names, self.live_names())
        self.assertEqual([], self.preempt_notifications())


class MigrateMayPreempt(ColdMigrate):
    OPIE = {'preempt_on_move': ['migrate']}

    def test_migration_preempts_on_destination(self):
        server = self._migrate_server(self.server)
        self.wait_for_terminations()

        self.assertEqual('host-B', server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(sorted(set(self.names) - {'P0'}), self.live_names())
        self.assert_within_capacity()
