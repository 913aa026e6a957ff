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

"""opie-scheduler on a Nova it was not built for schedules as stock Nova
would: nothing preempted, nothing overcommitted, and said loudly."""
import importlib.metadata

import fixtures

import nova.conf
from nova import context as nova_context

from opie.nova import compat
from opie.nova import metrics
from opie.nova.periodic import heartbeat
from opie.testing import cloud
from tests.functional import test_preemption

CONF = nova.conf.CONF


class SafeMode(cloud.OpieCloud):

    def setUp(self):
        real = importlib.metadata.version
        self.useFixture(fixtures.MonkeyPatch(
            'importlib.metadata.version',
            lambda name: '35.1.0' if name == 'nova' else real(name)))
        # The manager opie-scheduler starts here.
        self.MANAGER = compat.scheduler_manager()
        super().setUp()

    def test_nothing_is_preempted_nor_overcommitted(self):
        self.assertEqual(compat.SAFE_MODE_MANAGER, self.MANAGER)
        test_preemption.fill_with_preemptibles(self)
        names = self.live_names()

        server = self.boot('small', 'normal', expected_state='ERROR')

        self.assertIn('No valid host', server['fault']['message'])
        self.assertEqual(names, sorted(set(self.live_names()) - {'normal'}))
        self.assertEqual([], self.preempt_notifications())
        self.assert_within_capacity()

    def test_it_says_so_at_start_and_periodically(self):
        self.assertIn('OPIE: SAFE MODE: Nova 35.1.0 is not supported',
                      self.stdlog.logger.output)
        self.addCleanup(metrics.SAFE_MODE.set, 0)
        self.scheduler.manager._opie_safe_mode(
            nova_context.get_admin_context())
        beat = heartbeat.read(CONF.opie.heartbeat_path)
        self.assertIn('Nova 35.1.0 is not supported', beat['safe_mode'])
        self.assertEqual(1, metrics.value('opie_safe_mode'))

    def test_a_free_host_is_used_as_stock_nova_would(self):
        server = self.boot('medium', 'normal')
        self.assertEqual('ACTIVE', server['status'])
        self.assert_within_capacity()
