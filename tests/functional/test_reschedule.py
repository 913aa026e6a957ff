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

"""A build that fails on its compute goes to an alternate host.

With ``[scheduler] max_attempts = 3`` the scheduler hands the cell
conductor alternates, which the conductor claims through Nova's report
client, without OPIE's host token. An alternate never needs a preemption
OPIE has not written: where one was needed, the conductor's claim leaves
the host over capacity, and the reconciler repairs it by preempting
preemptibles only.
"""
import datetime

from oslo_utils import timeutils

import nova.conf
from nova import context as nova_context

from opie.testing import cloud
from opie.testing import harness
from tests.functional import test_preemption

CONF = nova.conf.CONF


class Reschedule(cloud.OpieCloud):

    def setUp(self):
        super().setUp()
        self.flags(max_attempts=3, group='scheduler')
        self.failed_on = []

    def fail_first_build(self):
        """The first spawn fails, as a compute whose hypervisor broke."""
        real = harness.PaperDriver.spawn

        def spawn(driver, context, instance, *args, **kwargs):
            if not self.failed_on:
                self.failed_on.append(instance.host)
                raise RuntimeError('the hypervisor refused the guest')
            return real(driver, context, instance, *args, **kwargs)
        self.stub_out('opie.testing.harness.PaperDriver.spawn', spawn)

    def test_a_normal_request_on_an_empty_cloud(self):
        self.fail_first_build()

        server = self.boot('medium', 'normal')

        [first] = self.failed_on
        self.assertNotEqual(first, server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(1, self.select_destinations.call_count)
        self.assert_within_capacity()

    def test_a_request_that_preempted(self):
        test_preemption.fill_with_preemptibles(self)
        b2 = self.server('B-2')['id']
        self.fail_first_build()

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        # B-2 went for the first try on host-B; the alternate, host-A,
        # took the server without a preemption: over capacity until the
        # reconciler takes its cheapest preemptible, A-0 (31 minutes).
        self.assertEqual(['host-B'], self.failed_on)
        self.assertEqual('host-A', server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual([b2], self.victim_uuids())
        a0 = self.server('A-0')['id']
        reconciler = self.scheduler.manager.reconciler
        context = nova_context.get_admin_context()
        now = timeutils.utcnow()
        self.assertEqual([], reconciler.run(context, now=now))
        [repair] = reconciler.run(context, now=now + datetime.timedelta(
            seconds=CONF.opie.reconcile_grace_period))

        self.assertEqual([a0], [v.uuid for v in repair.victims])
        self.assert_within_capacity()
        self.assertEqual('ACTIVE', self.api.get_server(server['id'])[
            'status'])
