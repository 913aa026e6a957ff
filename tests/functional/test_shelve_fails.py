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

"""Shelve mode: a victim whose snapshot fails on its compute (Glance down,
a quota) does not run on with its room given away: it is deleted, and
acted on once."""
import datetime

from oslo_utils import timeutils

import nova.conf
from nova import context as nova_context

from tests.functional import test_telling

CONF = nova.conf.CONF


class ShelveFails(test_telling.OneHost):
    OPIE = {'termination_mode': 'shelve'}

    def setUp(self):
        self.flags(shelved_offload_time=0)
        super().setUp()

    def test_a_victim_whose_snapshot_fails_is_deleted(self):
        def snapshot(*args, **kwargs):
            raise RuntimeError('glance is down')
        self.stub_out('opie.testing.harness.PaperDriver.snapshot', snapshot)
        self.boot('large', 'normal')
        self.wait_for_terminations()
        victim = self.victims[0]['id']
        context = nova_context.get_admin_context()
        now = timeutils.utcnow()
        grace = datetime.timedelta(seconds=CONF.opie.claimed_grace_period)
        reconciler = self.scheduler.manager.reconciler
        for i in range(4):
            reconciler.run(context, now=now + i * grace)
        # The room went to 'normal': the victim must not run on, and it
        # is acted on once.
        self._wait_until_deleted(self.victims[0])
        self.assertEqual(1, self.preempt_actions(victim))
