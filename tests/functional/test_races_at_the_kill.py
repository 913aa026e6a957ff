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

"""Two OPIE processes, or an owner, acting on one victim between the
terminator's read and its act: each victim is acted on once."""
import datetime

from oslo_utils import timeutils

import nova.conf
from nova import context as nova_context

from tests.functional import test_victims_left_running as attack

CONF = nova.conf.CONF


class TwoProcessesOneVictim(attack.AttackBase):
    HOSTS = ('host-A', 'host-B')

    def later(self, n=1):
        return self.now + datetime.timedelta(
            seconds=n * CONF.opie.claimed_grace_period)

    def test_reconciler_between_the_schedulers_read_and_act(self):
        deferred = self.defer_terminations()
        self.boot('medium', 'normal')
        [(preemptions, info)] = deferred
        [victim] = preemptions[0].victims
        other = self.other_worker().reconciler
        other.run(self.context, now=self.now)
        found = []
        pending = self.before_the_act(
            lambda: found.extend(other.run(self.context, now=self.later())))

        happened = self.manager.terminator.terminate(preemptions, info)

        self.assertEqual([], pending)
        self.assertEqual(1, len(found) + len(happened))
        self.assertEqual(1, self.preempt_actions(victim.uuid))
        self._wait_until_deleted({'id': victim.uuid})
        self.assertEqual([victim.uuid], self.victim_uuids())

    def test_two_reconcilers_on_one_claimed_victim(self):
        b2 = self.claim_without_terminating('B-2', 'host-B')
        other = self.other_worker().reconciler
        for reconciler in (self.manager.reconciler, other):
            reconciler.run(self.context, now=self.now)
        found = []
        pending = self.before_the_act(
            lambda: found.extend(other.run(self.context, now=self.later())))

        found.extend(self.manager.reconciler.run(self.context,
                                                 now=self.later()))

        self.assertEqual([], pending)
        self.assertEqual(1, len(found))
        self.assertEqual(1, self.preempt_actions(b2))
        self.assertEqual([b2], self.victim_uuids())

    def test_owner_deletes_between_read_and_act(self):
        b2 = self.claim_without_terminating('B-2', 'host-B')
        self.manager.reconciler.run(self.context, now=self.now)
        pending = self.before_the_act(
            lambda: self.member.delete_server(b2))

        found = self.manager.reconciler.run(self.context, now=self.later())

        self.assertEqual([], pending)
        self.assertEqual([], found)
        self.assertEqual(0, self.preempt_actions(b2))

    def test_owner_rebuilds_between_read_and_act(self):
        # The owner rebuilds it between the terminator's read and its
        # fence (casts run as calls here, so the rebuild is over by the
        # fence): one termination, by this pass or a later one.
        b2 = self.claim_without_terminating('B-2', 'host-B')
        self.manager.reconciler.run(self.context, now=self.now)
        server = self.api.get_server(b2)
        pending = self.before_the_act(
            lambda: self.member.post_server_action(b2, {'rebuild': {
                'imageRef': server['image']['id']}}))

        self.manager.reconciler.run(self.context, now=self.later())
        self.assertEqual([], pending)
        self.manager.reconciler.run(self.context, now=self.later(2))
        self.manager.reconciler.run(self.context, now=self.later(3))
        self.assertEqual(1, self.preempt_actions(b2))
        self.assert_gone_or_holding(b2, 'host-B')


class ClockSkew(attack.AttackBase):
    HOSTS = ('host-A', 'host-B')

    def test_row_stamped_by_a_compute_minutes_behind(self):
        # A request loads both hosts into the cache; then a compute 10
        # minutes behind the scheduler saves a new preemptible's row: the
        # catch-up query misses it, yet Placement's usage shows it, the
        # node is read in full and it is the cheapest victim.
        from nova.db.main import api as db
        from nova import objects
        b3 = self.server('B-3')
        self.member.delete_server(b3['id'])
        self._wait_until_deleted(b3)
        self.boot('large', 'warm')
        self.wait_for_terminations()
        b1 = self.server('B-1')
        self.member.delete_server(b1['id'])
        self._wait_until_deleted(b1)
        late = self.boot('small', 'late', host='host-B', preemptible=True,
                         minutes=1)
        skew = timeutils.utcnow() - datetime.timedelta(minutes=10)
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            self.context, late['id'])
        with nova_context.target_cell(self.context,
                                      mapping.cell_mapping) as cctxt:
            db.instance_update(cctxt, late['id'], {'updated_at': skew})
        before = len(self.victim_uuids())
        from opie.nova.request import host_records
        reads = []
        real = host_records.InstanceLoader._read

        def spy(loader, cell_uuid, hosts=None, since=None):
            reads.append((tuple(hosts or ()), since))
            return real(loader, cell_uuid, hosts=hosts, since=since)
        self.stub_out(
            'opie.nova.request.host_records.InstanceLoader._read', spy)

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual('host-B', server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual([late['id']], self.victim_uuids()[before:])
        # The catch-up (since the last query) missed the row; the full
        # read of host-B found it.
        self.assertIn((('host-B',), None), reads)
        self.assertTrue(all(since > skew for hosts, since in reads
                            if since is not None), reads)
