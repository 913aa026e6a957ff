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

"""[opie] max_victims bounds what a request may cost others, not a repair:
a forced live migration that leaves host-A two medium preemptibles over
capacity is repaired with ``max_victims = 1``."""
import datetime

from oslo_utils import timeutils

import nova.conf
from nova import context as nova_context
from nova import objects

from opie.testing import cloud

CONF = nova.conf.CONF


class OneVictimAtMost(cloud.OpieCloud):
    OPIE = {'max_victims': 1}

    def test_overcommit_needing_two_victims_is_repaired(self):
        for i, minutes in enumerate((91, 152, 213, 274)):
            self.boot('medium', 'A-%d' % i, host='host-A', preemptible=True,
                      minutes=minutes)
        mover = self.boot('large', 'mover', host='host-B')
        node = objects.ComputeNode.get_by_host_and_nodename(
            nova_context.get_admin_context(), 'host-A', 'host-A')
        node.cpu_allocation_ratio = node.ram_allocation_ratio = 2.0
        node.save()
        self.api.microversion = '2.30'
        self.api.post_server_action(mover['id'], {'os-migrateLive': {
            'host': 'host-A', 'block_migration': 'auto', 'force': True}})
        self.api.microversion = 'latest'
        self._wait_for_migration_status(mover, ['completed'])
        context = nova_context.get_admin_context()
        now = timeutils.utcnow()
        grace = datetime.timedelta(
            seconds=CONF.opie.reconcile_grace_period)
        reconciler = self.scheduler.manager.reconciler
        for i in range(4):
            reconciler.run(context, now=now + i * grace)
        self.assert_within_capacity()
