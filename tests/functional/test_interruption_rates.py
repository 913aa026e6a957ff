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

"""Interruption rates: the reconciler's lease holder publishes each
preemptible flavor's preemptions per server-day as extra specs a tenant
reads through the compute API."""
import datetime
from unittest import mock

from oslo_utils import timeutils

from nova.compute import vm_states
from nova import context as nova_context
from nova import objects

from opie.core import contract
from opie.nova.periodic import interruptions as nova_interruptions
from opie.testing import cloud
from tests.functional import test_preemption

RATE_1D = 'opie:interruptions_per_server_day_1d'
RATE_7D = 'opie:interruptions_per_server_day_7d'


class InterruptionRates(cloud.OpieCloud):

    def setUp(self):
        super().setUp()
        self.context = nova_context.get_admin_context()
        test_preemption.fill_with_preemptibles(self)
        # Every medium preemptible was created two days ago: one
        # server-day each in the last day, two in the last week.
        for server in self.api.get_servers():
            self.set_created_at(server['id'], datetime.timedelta(days=2))

    def set_created_at(self, uuid, ago, **fields):
        mapping = objects.InstanceMapping.get_by_instance_uuid(self.context,
                                                               uuid)
        with nova_context.target_cell(self.context,
                                      mapping.cell_mapping) as cctxt:
            instance = objects.Instance.get_by_uuid(cctxt, uuid)
            instance.created_at = timeutils.utcnow() - ago
            for name, value in fields.items():
                setattr(instance, name, value)
            instance.save()

    def tenant_specs(self, size):
        """The flavor's extra specs as a tenant (no admin) reads them."""
        flavor_id = self.preemptible[size]
        listed = self.api.api_get(
            '/flavors/%s/os-extra_specs' % flavor_id).body['extra_specs']
        # What ``openstack flavor show`` shows (2.61 and later).
        shown = self.api.api_get('/flavors/%s' % flavor_id).body['flavor']
        self.assertEqual(listed, shown['extra_specs'])
        return listed

    def test_the_lease_holder_publishes_preemptions_per_server_day(self):
        self.assertNotIn(RATE_1D, self.tenant_specs('medium'))
        self.boot('medium', 'normal')
        self.wait_for_terminations()
        self.assertEqual(1, len(self.victim_uuids()))

        # One reconcile pass, as the scheduler's periodic task runs it.
        self.scheduler.manager._opie_reconcile(self.context)

        specs = self.tenant_specs('medium')
        # One preemption over 8 servers alive all day (the victim up to
        # now), and over 16 server-days in the week.
        self.assertEqual('0.125', specs[RATE_1D])
        self.assertEqual('0.0625', specs[RATE_7D])
        updated = datetime.datetime.strptime(
            specs['opie:interruptions_updated_at'], '%Y-%m-%dT%H:%M:%SZ')
        self.assertLessEqual(updated, timeutils.utcnow())
        # A preemptible flavor no server ever used has no rate to show.
        small = self.tenant_specs('small')
        self.assertEqual('unknown', small[RATE_1D])
        self.assertEqual('unknown', small[RATE_7D])
        # Normal flavors get none.
        self.assertEqual({}, self.api.api_get(
            '/flavors/%s/os-extra_specs'
            % self.normal['medium']).body['extra_specs'])
        # Nothing changed since: nothing is written again.
        self.assertEqual({}, nova_interruptions.publish(self.context))

    def test_published_rates_leave_the_flavor_preemptible(self):
        self.scheduler.manager._opie_reconcile(self.context)
        self.assertEqual('0', self.tenant_specs('medium')[RATE_1D])
        # The flavor contract still holds: the next boot preempts.
        self.boot('medium', 'normal')
        self.wait_for_terminations()
        self.assertEqual(1, len(self.victim_uuids()))

    def test_a_refresh_waits_for_its_interval(self):
        reconciler = self.scheduler.manager.reconciler
        now = timeutils.utcnow()
        self.assertIn('preemptible.medium',
                      reconciler.publish_rates(self.context, 3600, now=now))
        self.boot('medium', 'normal')
        self.wait_for_terminations()
        self.assertEqual({}, reconciler.publish_rates(
            self.context, 3600, now=now + datetime.timedelta(seconds=3599)))
        self.assertEqual('0', self.tenant_specs('medium')[RATE_1D])
        written = reconciler.publish_rates(
            self.context, 3600, now=now + datetime.timedelta(seconds=3600))
        # An hour on: the victim's last day is an hour short, and the
        # seven others have lived an hour more.
        self.assertEqual(
            {'1d': 0.126, '7d': 0.0614},
            contract.published(written['preemptible.medium']))
        self.assertEqual(0.126, round(1 / (7 + 23 / 24), 3))
        self.assertEqual(0.0614, round(1 / (7 * (2 + 1 / 24) + 2), 4))

    def test_a_shelved_offloaded_server_ends_its_life_there(self):
        # Offloaded a day ago, it held no room and could not be preempted
        # since: it dilutes neither rate with that day.
        offloaded = next(s['id'] for s in self.api.get_servers())
        self.set_created_at(
            offloaded, datetime.timedelta(days=2),
            vm_state=vm_states.SHELVED_OFFLOADED,
            updated_at=timeutils.utcnow() - datetime.timedelta(days=1))
        self.boot('medium', 'normal')
        self.wait_for_terminations()
        self.assertNotIn(offloaded, self.victim_uuids())

        written = nova_interruptions.publish(self.context)

        # 7 server-days in the day (not 8), 15 in the week (not 16).
        self.assertEqual({'1d': 0.143, '7d': 0.0667},
                         contract.published(
                             written['preemptible.medium']))

    def test_a_failed_computation_waits_for_its_interval(self):
        reconciler = self.scheduler.manager.reconciler
        now = timeutils.utcnow()
        with mock.patch.object(nova_interruptions, 'publish',
                               side_effect=RuntimeError('db gone')) as fail:
            self.assertRaises(RuntimeError, reconciler.publish_rates,
                              self.context, 3600, now=now)
            # The next pass does not compute again: a computation that
            # fails costs what one that succeeds does, once an interval.
            self.assertEqual({}, reconciler.publish_rates(
                self.context, 3600, now=now + datetime.timedelta(
                    seconds=60)))
        self.assertEqual(1, fail.call_count)
