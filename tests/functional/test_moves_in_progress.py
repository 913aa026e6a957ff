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

"""A preemptible in motion is no victim whose room was taken.

Midway through a move Nova's records disagree for a while: the instance
row names one host while its allocations sit on another, and the
migration's consumer holds the source. Each test stops the fake driver in
one stage of one move and, there, lets the reconciler pass twice with its
grace periods elapsed in between. Nothing may be preempted: nobody needs
the mover's room; the move then finishes as Nova would finish it.
"""
import datetime

from oslo_utils import timeutils

import nova.conf
from nova import context as nova_context

from opie.testing import cloud
from opie.testing import harness

CONF = nova.conf.CONF


class MidMove(cloud.OpieCloud):
    HOSTS = ('host-A', 'host-B', 'host-C')

    def setUp(self):
        super().setUp()
        self.context = nova_context.get_admin_context()
        self.mover = self.boot('small', 'mover', host='host-A',
                               preemptible=True)
        self.passes = []

    def pause_in(self, method, when=lambda instance: True):
        """Run the reconciler twice, a grace period apart, from inside the
        fake driver's ``method`` the first time ``when(instance)``."""
        real = getattr(harness.PaperDriver, method)
        pending = [True]

        def hooked(driver, context, *args, **kwargs):
            instance = kwargs.get('instance') or next(
                a for a in args if hasattr(a, 'task_state'))
            if pending and instance.uuid == self.mover['id'] \
                    and when(instance):
                pending.pop()
                self.passes.append((instance.task_state,
                                    self.reconcile_twice()))
            return real(driver, context, *args, **kwargs)
        self.stub_out('opie.testing.harness.PaperDriver.' + method, hooked)

    def reconcile_twice(self):
        reconciler = self.scheduler.manager.reconciler
        now = timeutils.utcnow()
        grace = max(CONF.opie.claimed_grace_period,
                    CONF.opie.reconcile_grace_period)
        return (reconciler.run(self.context, now=now)
                + reconciler.run(self.context, now=now + datetime.timedelta(
                    seconds=grace)))

    def assert_nothing_preempted(self, stages=1):
        self.assertEqual(stages, len(self.passes), self.passes)
        self.assertEqual([], [p for _, found in self.passes for p in found])
        self.assertEqual([], self.preempt_notifications())
        self.assertEqual(0, self.preempt_actions(self.mover['id']))
        self.assert_within_capacity()

    def test_live_migration_on_the_source(self):
        self.pause_in('live_migration')
        self._live_migrate(self.mover, host='host-B')
        self.assert_nothing_preempted()
        self.assertEqual('host-B', self.host_of(self.mover))

    def test_live_migration_on_the_destination(self):
        self.pause_in('pre_live_migration')
        self._live_migrate(self.mover, host='host-B')
        self.assert_nothing_preempted()

    def test_resize_copying_its_disk(self):
        self.pause_in('migrate_disk_and_power_off')
        self._resize_server(self.mover, self.preemptible['medium'])
        self.assert_nothing_preempted()

    def test_resize_finishing_on_the_destination(self):
        self.pause_in('finish_migration')
        self._resize_server(self.mover, self.preemptible['medium'])
        self.assert_nothing_preempted()

    def test_cold_migration_copying_its_disk(self):
        self.pause_in('migrate_disk_and_power_off')
        self._migrate_server(self.mover, host='host-C')
        self.assert_nothing_preempted()

    def test_cold_migration_finishing_on_the_destination(self):
        self.pause_in('finish_migration')
        self._migrate_server(self.mover, host='host-C')
        self.assert_nothing_preempted()

    def test_resize_reverting(self):
        self._resize_server(self.mover, self.preemptible['medium'])
        self.pause_in('finish_revert_migration')
        self.api.post_server_action(self.mover['id'],
                                    {'revertResize': None})
        self._wait_for_state_change(self.mover, 'ACTIVE')
        self._wait_for_migration_status(self.mover, ['reverted'])
        self.assert_nothing_preempted()
        self.assertEqual('host-A', self.host_of(self.mover))

    def test_evacuation_rebuilding_on_the_destination(self):
        self.computes['host-A'].stop()
        self.api.put_service_force_down(
            self.api.get_services(host='host-A',
                                  binary='nova-compute')[0]['id'], True)
        self.pause_in('spawn')
        self._evacuate_server(self.mover, expected_host='host-B',
                              extra_post_args={'host': 'host-B'})
        self.assert_nothing_preempted()

    def test_shelve_taking_its_snapshot(self):
        self.pause_in('snapshot')
        self._shelve_server(self.mover)
        self.assert_nothing_preempted()

    def test_unshelve_spawning_on_a_named_host(self):
        self._shelve_server(self.mover)
        self.pause_in('spawn')
        self.api.post_server_action(self.mover['id'],
                                    {'unshelve': {'host': 'host-C'}})
        self._wait_for_state_change(self.mover, 'ACTIVE')
        self.assert_nothing_preempted()
        self.assertEqual('host-C', self.host_of(self.mover))
