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

"""What an operator monitors (issue 13 point 6, issue 27): the
``opie.preempt.end`` notification's versioned payload names each victim's
project, and the Prometheus counters move with preemptions, failed
requests, claim conflicts and reconciler repairs; the reconciler's pass
exports who holds its lease, when it last succeeded and the capacity left
per aggregate; each worker's textfile says the same.

The registry is per process and the functional tests share one, so every
check is on how much a metric moved.
"""
import datetime
import os
import time

import fixtures
from oslo_utils import timeutils
from prometheus_client import parser

import nova.conf
from nova import context as nova_context

from opie.nova import metrics
from opie.nova import notifications
from opie.nova.request import claim
from opie.testing import cloud
from tests.functional import test_preemption

CONF = nova.conf.CONF
DELETED = {'mode': 'delete', 'reason': 'request'}


def value(name, **labels):
    return metrics.value(name, **labels) or 0.0


def read_textfile(path):
    """{(sample name, sorted labels): value} of a .prom file."""
    with open(path, encoding='utf-8') as f:
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in parser.text_string_to_metric_families(f.read())
                for s in family.samples}


class Metrics(cloud.OpieCloud):

    def setUp(self):
        super().setUp()
        self.metrics_dir = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'textfile')
        self.flags(metrics_dir=self.metrics_dir, group='opie')
        self.manager = self.scheduler.manager

    def test_preemption_is_notified_and_counted(self):
        test_preemption.fill_with_preemptibles(self)
        victim = self.server('B-2')
        preemptions = value('opie_preemptions_total', **DELETED)
        requests = value('opie_victims_per_request_count')
        victims = value('opie_victims_per_request_sum')
        latencies = value('opie_select_destinations_seconds_count')

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        [notification] = self.preempt_notifications()
        self.assertEqual(notifications.END, notification['event_type'])
        self.assertEqual('INFO', notification['priority'])
        payload = notification['payload']
        [create] = [a for a in self.api.get_instance_actions(server['id'])
                    if a['action'] == 'create']
        self.assertEqual({
            'reason': 'request',
            'instance_uuid': server['id'],
            'host': 'host-B',
            'nodename': 'host-B',
            'mode': 'delete',
        }, {k: payload[k] for k in (
            'reason', 'instance_uuid', 'host', 'nodename', 'mode')})
        self.assertGreater(payload['cost'], 0)
        self.assertEqual({
            'request_id': create['request_id'],
            'project_id': self.api.project_id,
            'flavor': 'medium',
        }, {k: payload['request'][k] for k in (
            'request_id', 'project_id', 'flavor')})
        [described] = payload['victims']
        self.assertEqual({
            'uuid': victim['id'],
            'project_id': victim['tenant_id'],
            'user_id': victim['user_id'],
            'flavor': 'preemptible.medium',
            'vcpus': 2, 'memory_mb': 4000, 'disk_gb': 40,
            'terminated': True,
        }, {k: v for k, v in described.items()
            if k not in ('launched_at', 'cost')})
        self.assertIsNotNone(described['launched_at'])
        self.assertGreater(described['cost'], 0)

        self.assertEqual(preemptions + 1,
                         value('opie_preemptions_total', **DELETED))
        self.assertEqual(requests + 1,
                         value('opie_victims_per_request_count'))
        self.assertEqual(victims + 1, value('opie_victims_per_request_sum'))
        self.assertEqual(latencies + 1,
                         value('opie_select_destinations_seconds_count'))
        # The textfile was written at the preemption, with this worker's
        # labels on every sample.
        written = read_textfile(metrics.path(self.metrics_dir, CONF.host))
        labels = tuple(sorted(dict(DELETED, host=CONF.host,
                                   worker='0').items()))
        self.assertEqual(value('opie_preemptions_total', **DELETED),
                         written[('opie_preemptions_total', labels)])
        self.assertFalse([k for k in written if k[0].endswith('_created')])

    def test_request_without_room_is_counted(self):
        test_preemption.fill_with_preemptibles(self)
        failed = value('opie_no_room_total', preemptible='true')
        placed = value('opie_victims_per_request_count')

        self.boot('small', 'late', preemptible=True, expected_state='ERROR')

        self.assertEqual(failed + 1,
                         value('opie_no_room_total', preemptible='true'))
        self.assertEqual(placed, value('opie_victims_per_request_count'))
        self.assertEqual([], self.preempt_notifications())

    def test_claim_conflict_and_retry_are_counted(self):
        # As Race.test_normal_placed_beside_normal_does_not_overcommit:
        # the other worker writes host-A between this worker's decision
        # and its write, which Placement refuses; host-A read again, this
        # worker preempts.
        other = self.other_worker()
        for i in range(2):
            self.boot('large', 'NB%d' % i, host='host-B')
        for i, minutes in enumerate((70, 80, 90)):
            self.boot('medium', 'P%d' % i, host='host-A', preemptible=True,
                      minutes=minutes)
        conflicts = value('opie_claim_conflicts_total', writer='scheduler')
        retries = value('opie_claim_retries_total')

        def competitor():
            with self.served_by(other):
                self.boot('medium', 'second')
        self.before_write(competitor)
        self.boot('medium', 'first')
        self.wait_for_terminations()

        self.assertEqual(conflicts + 1, value('opie_claim_conflicts_total',
                                              writer='scheduler'))
        self.assertEqual(retries + 1, value('opie_claim_retries_total'))

    def test_reconciler_repair_is_counted(self):
        test_preemption.fill_with_preemptibles(self)
        # A normal server written without the host token, as Nova's own
        # report client writes: host-A over capacity.
        self.stub_out('opie.nova.request.plan.Plan.record_of',
                      lambda plan, allocations: None)
        self.boot('medium', 'normal', host='host-A')
        repairs = value('opie_reconciler_repairs_total', kind='overcommit')
        reconciled = value('opie_preemptions_total', mode='delete',
                           reason='reconcile')

        later = timeutils.utcnow() + datetime.timedelta(
            seconds=CONF.opie.reconcile_grace_period)
        context = nova_context.get_admin_context()
        self.manager.reconciler.run(context, now=later - datetime.timedelta(
            seconds=CONF.opie.reconcile_grace_period))
        [preemption] = self.manager.reconciler.run(context, now=later)

        self.assertEqual(repairs + len(preemption.victims), value(
            'opie_reconciler_repairs_total', kind='overcommit'))
        self.assertEqual(reconciled + len(preemption.victims), value(
            'opie_preemptions_total', mode='delete', reason='reconcile'))
        [notification] = self.preempt_notifications()
        self.assertEqual('reconcile', notification['payload']['reason'])
        self.assertIsNone(notification['payload']['request'])

    def test_heartbeat_writes_the_textfile(self):
        self.manager._opie_heartbeat(None)

        written = read_textfile(metrics.path(self.metrics_dir, CONF.host))
        self.assertIn(('opie_select_destinations_seconds_count',
                       (('host', CONF.host), ('worker', '0'))), written)

    def test_reconcile_pass_exports_lease_and_capacity(self):
        fast = self._create_aggregate('fast')
        self.api.add_host_to_aggregate(fast, 'host-A')
        self.boot('large', 'normal', host='host-A')
        self.boot('medium', 'spot', host='host-B', preemptible=True)
        context = nova_context.get_admin_context()
        started = time.time()

        self.manager._opie_reconcile(context)

        self.assertEqual(1, value('opie_lease_holder'))
        self.assertGreaterEqual(
            value('opie_last_reconcile_success_timestamp_seconds'), started)
        # host-A (in "fast"): a large normal server; host-B (in no
        # aggregate): a medium preemptible one. Capacity 8 VCPU,
        # 16384 MB, 1000 GB each.
        expected = {
            ('fast', 'opie_capacity'): (8, 16384, 1000),
            ('fast', 'opie_normal_free'): (4, 8384, 920),
            ('fast', 'opie_preemptible_free'): (4, 8384, 920),
            (metrics.NO_AGGREGATE, 'opie_capacity'): (8, 16384, 1000),
            (metrics.NO_AGGREGATE, 'opie_normal_free'): (8, 16384, 1000),
            (metrics.NO_AGGREGATE, 'opie_preemptible_free'): (6, 12384,
                                                              960),
        }
        for (aggregate, name), amounts in expected.items():
            self.assertEqual(list(amounts), [value(
                name, aggregate=aggregate, resource=rc)
                for rc in ('VCPU', 'MEMORY_MB', 'DISK_GB')],
                (aggregate, name))
        self.manager._opie_heartbeat(None)
        written = read_textfile(metrics.path(self.metrics_dir, CONF.host))
        self.assertEqual(920, written[('opie_normal_free', (
            ('aggregate', 'fast'), ('host', CONF.host),
            ('resource', 'DISK_GB'), ('worker', '0')))])

        # Another worker finds the lease held: it holds none, and exports
        # no capacity (the holder does). The registry is the process's,
        # so it now says what that worker knows.
        self.other_worker()._opie_reconcile(context)

        self.assertEqual(0, value('opie_lease_holder'))
        self.manager._opie_heartbeat(None)
        written = read_textfile(metrics.path(self.metrics_dir, CONF.host))
        self.assertEqual(0, written[('opie_lease_holder', (
            ('host', CONF.host), ('worker', '0')))])
        self.assertFalse([k for k in written if k[0] in (
            'opie_capacity', 'opie_normal_free', 'opie_preemptible_free')])

    def test_failed_reconcile_pass_is_not_a_success(self):
        context = nova_context.get_admin_context()
        self.manager._opie_reconcile(context)
        succeeded = value('opie_last_reconcile_success_timestamp_seconds')

        def fail(*args, **kwargs):
            raise claim.ClaimError('Placement: 503')
        self.stub_out('opie.nova.request.host_records.read_usages', fail)
        self.manager._opie_reconcile(context)

        self.assertEqual(1, value('opie_lease_holder'))
        self.assertEqual(succeeded, value(
            'opie_last_reconcile_success_timestamp_seconds'))
