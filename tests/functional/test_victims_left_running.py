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

"""A victim whose room was taken never runs on: whatever fails or changes
between its claim and its kill, a later pass finishes the kill, once.

Found by an adversarial review: a delete whose message to the compute was
lost, a process killed right after the compare-and-swap that begins the
kill, a victim resized and reverted by its owner after it was taken, an
operator's lock set after its room was given, an allocation healed back
between a repair and its kill."""
import datetime
import io

import fixtures
import oslo_messaging
from oslo_utils import timeutils

from nova.cmd import manage
from nova.compute import rpcapi as compute_rpcapi
import nova.conf
from nova import context as nova_context
from nova import objects

from opie.nova.request import terminate
from opie.testing import cloud
from tests.functional import test_preemption

CONF = nova.conf.CONF


class AttackBase(cloud.OpieCloud):

    def setUp(self):
        super().setUp()
        test_preemption.fill_with_preemptibles(self)
        self.manager = self.scheduler.manager
        self.context = nova_context.get_admin_context()
        self.now = timeutils.utcnow()
        self.member = self.api_fixture.api

    def claim_without_terminating(self, name, host):
        uuid = super().claim_without_terminating(name, host)
        # A normal server takes its room, as the request it was taken for
        # did: it cannot be given back.
        self.boot('medium', 'taker-' + name, host=host)
        return uuid

    def row(self, uuid):
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            self.context, uuid)
        with nova_context.target_cell(self.context,
                                      mapping.cell_mapping) as cctxt:
            return objects.Instance.get_by_uuid(cctxt, uuid)

    def reconcile_passes(self, n=4):
        grace = max(CONF.opie.claimed_grace_period,
                    CONF.opie.reconcile_grace_period)
        done = []
        for i in range(n):
            done += self.manager.reconciler.run(
                self.context,
                now=self.now + datetime.timedelta(seconds=grace * i))
        return done

    def assert_gone_or_holding(self, uuid, host):
        """The victim is gone, or holds its room where it runs."""
        servers = {s['id']: s for s in self.api.get_servers()}
        if uuid not in servers:
            return
        allocs = self._get_allocations_by_server_uuid(uuid)
        rp = self._get_provider_uuid_by_host(host)
        self.assertIn(rp, allocs,
                      'victim %s runs on %s (task %s) holding nothing '
                      'there: %s' % (uuid, host,
                                     self.row(uuid).task_state, allocs))


class ThreeHosts(AttackBase):
    HOSTS = ('host-A', 'host-B', 'host-C')

    def test_delete_cast_fails_victim_stuck_in_deleting_forever(self):
        # The scheduler took B-2; its background delete's cast to the
        # compute fails once (the message bus hiccups).
        b2 = self.claim_without_terminating('B-2', 'host-B')
        real = compute_rpcapi.ComputeAPI.terminate_instance
        failing = [True]

        def terminate_instance(api, *args, **kwargs):
            if failing:
                failing.pop()
                raise oslo_messaging.MessageDeliveryFailure('bus down')
            return real(api, *args, **kwargs)
        self.stub_out('nova.compute.rpcapi.ComputeAPI.terminate_instance',
                      terminate_instance)
        first = self.reconcile_passes(2)
        self.assertEqual([], failing)
        self.assertEqual([], first)
        # The bus is back: later passes should finish the job.
        self.reconcile_passes(4)
        self.assert_gone_or_holding(b2, 'host-B')

    def test_process_dies_right_after_the_fence(self):
        # The reconciler's process dies between the compare-and-swap that
        # sets task_state=deleting and Nova's delete.
        b2 = self.claim_without_terminating('B-2', 'host-B')
        real = terminate.Terminator._record_action
        dying = [True]

        def record_action(*args):
            if dying:
                dying.pop()
                raise SystemExit()
            return real(*args)
        self.stub_out('opie.nova.request.terminate.Terminator._record_action',
                      staticmethod(record_action))
        grace = CONF.opie.claimed_grace_period
        self.manager.reconciler.run(self.context, now=self.now)
        self.assertRaises(SystemExit, self.manager.reconciler.run,
                          self.context, now=self.now + datetime.timedelta(
                              seconds=grace))
        # The next holder.
        other = self.other_worker().reconciler
        for i in range(2, 6):
            other.run(self.context, now=self.now + datetime.timedelta(
                seconds=grace * i))
        self.assert_gone_or_holding(b2, 'host-B')

    def test_claimed_victim_resized_then_reverted_runs_forever(self):
        # A worker took B-2 and died. Its owner resizes it (to host-C)
        # and reverts: it runs on host-B again, holding nothing there.
        b2 = self.claim_without_terminating('B-2', 'host-B')
        server = self.server('B-2')
        self.member.post_server_action(b2, {'resize': {
            'flavorRef': self.preemptible['large']}})
        self._wait_for_state_change(server, 'VERIFY_RESIZE')
        self.member.post_server_action(b2, {'revertResize': None})
        self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual('host-B', self.host_of(server))
        self.reconcile_passes(4)
        self.assert_gone_or_holding(b2, 'host-B')


class TwoHosts(AttackBase):
    HOSTS = ('host-A', 'host-B')

    def test_operator_lock_between_read_and_act(self):
        deferred = self.defer_terminations()
        self.boot('medium', 'normal')
        [(preemptions, info)] = deferred
        [victim] = preemptions[0].victims
        locking = self.before_the_act(
            lambda: self.lock_as_operator(victim.uuid))
        self.manager.terminator.terminate(preemptions, info)
        self.assertEqual([], locking)
        # The lock protects from being chosen; set after the victim's room
        # was given, it does not take the room back.
        self.assertEqual(1, self.preempt_actions(victim.uuid))
        self.assertNotIn(victim.uuid, [s['id'] for s in
                                       self.api.get_servers()])
        self.assert_within_capacity()


class ReconcilerRepairHealed(AttackBase):
    HOSTS = ('host-A', 'host-B')

    def test_heal_between_the_repair_and_the_kill(self):
        # The reconciler takes A-0 to repair host-A's overcommit; an
        # operator heals allocations before the kill: A-0 holds its room
        # on host-A again, the very host that needs it.
        self.stub_out('opie.nova.request.plan.Plan.record_of',
                      lambda plan, allocations: None)
        self.boot('medium', 'normal', host='host-A')
        a0 = self.server('A-0')['id']
        self.manager.reconciler.run(self.context, now=self.now)
        real = self.manager.terminator.terminate

        def heal_then_terminate(preemptions, info):
            self.useFixture(fixtures.MonkeyPatch('sys.stdout',
                                                 io.StringIO()))
            manage.PlacementCommands().heal_allocations(instance_uuid=a0)
            return real(preemptions, info)
        self.useFixture(fixtures.MockPatchObject(
            self.manager.terminator, 'terminate',
            side_effect=heal_then_terminate))
        later = self.now + datetime.timedelta(
            seconds=CONF.opie.reconcile_grace_period)
        happened = self.manager.reconciler.run(self.context, now=later)
        self.assertEqual([a0], [v.uuid for p in happened for v in p.victims])
        self.assertEqual(1, self.preempt_actions(a0))
