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

"""``opie-manage rollback`` on a real cloud, and the reinstall after it.

Issue 24: a compute restarted without its provider config while its host
token still holds the ``CUSTOM_OPIE_HOST`` unit does not start (its
resource tracker cannot remove inventory in use). This test shows that
failure, then the command that removes what OPIE put into Placement, the
computes starting without OPIE, and OPIE installed again preempting as
before. ``opie-manage`` runs as in :mod:`tests.functional.test_audit`.
"""
import json
import os
import shutil

import fixtures
from nova import context as nova_context
from nova import exception as nova_exception
import nova.conf

from opie.cmd import rollback
from opie.core import preemptible
from opie.nova.periodic import leader
from opie.nova.request import cas
from tests.functional import test_audit

CONF = nova.conf.CONF
OLD_BEAT = '2020-01-01T00:00:00Z'


class Rollback(test_audit.AuditCloud):

    def setUp(self):
        super().setUp()
        directory = CONF.compute.provider_config_location
        self.provider_config = os.path.join(directory, 'opie.yaml')
        self.saved_config = os.path.join(self.config_dir, 'opie.yaml')
        shutil.copy(self.provider_config, self.saved_config)
        self.heartbeat = CONF.opie.heartbeat_path

    # the cloud -------------------------------------------------------------
    def restart(self, host):
        self.computes[host] = self.restart_compute_service(
            self.computes[host])

    def stop_opie_scheduler(self):
        """What a heartbeat file looks like long after opie-scheduler was
        replaced by the stock nova-scheduler."""
        with open(self.heartbeat) as f:
            beat = json.load(f)
        beat['time'] = OLD_BEAT
        with open(self.heartbeat, 'w') as f:
            json.dump(beat, f)

    def restart_opie_scheduler(self):
        self.scheduler.stop()
        self.scheduler = self._setup_scheduler_service()
        self.track_terminations(self.scheduler.manager)

    def reconcile(self):
        self.scheduler.manager._opie_reconcile(
            nova_context.get_admin_context())

    def placement_get(self, url, version='1.28'):
        return self.placement.get(url, version=version).body

    def token_of(self, host):
        uuid = cas.consumer(self._get_provider_uuid_by_host(host))
        return self.placement_get('/allocations/%s' % uuid)['allocations']

    def inventory_classes(self, host):
        uuid = self._get_provider_uuid_by_host(host)
        return set(self.placement_get('/resource_providers/%s/inventories'
                                      % uuid)['inventories'])

    def lease(self):
        return self.placement_get('/allocations/%s'
                                  % leader.CONSUMER_UUID)['allocations']

    def resource_classes(self):
        return {c['name'] for c in self.placement_get(
            '/resource_classes', '1.7')['resource_classes']}

    def rollback(self, *args):
        return self.opie_manage('rollback', '--heartbeat-file',
                                self.heartbeat, *args)

    def assert_refused(self, result, message):
        code, out, err = result
        self.assertEqual(2, code)
        self.assertEqual('', out)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertIn(message, err)

    # the procedure ---------------------------------------------------------
    def test_rollback_then_reinstall(self):
        self.boot('large', 'p-A', host='host-A', preemptible=True)
        self.boot('large', 'p-B', host='host-B', preemptible=True)
        self.reconcile()
        self.assertTrue(self.token_of('host-A'))

        # The OPIE scheduler still runs: nothing is touched.
        self.assert_refused(self.rollback(), 'opie-scheduler still runs')
        self.stop_opie_scheduler()
        # Preemptible servers run and nobody said what to do with them.
        self.assert_refused(self.rollback(),
                            '2 preemptible servers still run')

        # The failure of issue 24: host-A drained, its provider config
        # removed, its token left; nova-compute does not start.
        self._delete_server(self.server('p-A'))
        os.unlink(self.provider_config)
        self.assertRaises(nova_exception.PlacementPciException,
                          self.restart, 'host-A')

        code, out, _ = self.rollback('--preemptibles', 'delete',
                                     '--dry-run')
        self.assertEqual(0, code)
        self.assertIn('would delete preemptible server', out)
        self.assertTrue(self.token_of('host-A'))
        self.assertEqual(['p-B'], self.live_names())

        code, out, _ = self.rollback('--preemptibles', 'delete')
        self.assertEqual(0, code, out)
        self.assertEqual([], self.live_names())
        for host in self.HOSTS:
            self.assertEqual({}, self.token_of(host))
        self.assertEqual({}, self.lease())
        self.assertEqual([], self.placement_get(
            '/resource_providers?name=%s' % leader.PROVIDER_NAME)
            ['resource_providers'])

        # The computes start without OPIE, and report no class of it.
        for host in self.HOSTS:
            self.restart(host)
            self.assertFalse(self.inventory_classes(host)
                             & set(preemptible.PROVIDER_CONFIG_CLASSES))
        # Run again: OPIE's resource classes go too, nothing is left.
        code, out, _ = self.rollback()
        self.assertEqual(0, code, out)
        self.assertFalse(self.resource_classes() & (
            set(preemptible.PROVIDER_CONFIG_CLASSES)
            | {leader.RESOURCE_CLASS}))
        self.assertIn('nothing of OPIE is left in Placement', out)

        # Reinstall: provider configs back, computes and opie-scheduler
        # restarted; OPIE preempts again.
        shutil.copy(self.saved_config, self.provider_config)
        for host in self.HOSTS:
            self.restart(host)
        self.restart_opie_scheduler()
        for host in self.HOSTS:
            for i in range(2):
                self.boot('large', 'p-%s-%d' % (host, i), host=host,
                          preemptible=True)
        self.boot('large', 'normal')
        self.wait_for_terminations()
        self.assertEqual(4, len(self.live_names()))
        self.assertEqual(1, len(self.victim_uuids()))
        self.assertTrue(self.token_of(self.host_of(self.server('normal'))))
        self.reconcile()
        self.assertTrue(self.lease())

    def test_shelved_servers_are_offloaded(self):
        # Computes that keep shelved servers: the command offloads them.
        self.flags(shelved_offload_time=-1)
        self.useFixture(fixtures.MockPatchObject(rollback, 'POLL_SECONDS',
                                                 0))
        server = self.boot('large', 'p-A', host='host-A', preemptible=True)
        self.stop_opie_scheduler()

        code, out, _ = self.rollback('--preemptibles', 'shelve')

        self.assertEqual(0, code, out)
        self.assertIn('shelved preemptible server p-A', out)
        self.assertEqual('SHELVED_OFFLOADED',
                         self.api.get_server(server['id'])['status'])
        os.unlink(self.provider_config)
        self.restart('host-A')

    def test_keep_leaves_computes_up_with_their_provider_config(self):
        server = self.boot('large', 'p-A', host='host-A', preemptible=True)
        self.stop_opie_scheduler()

        code, out, _ = self.rollback('--preemptibles', 'keep')

        self.assertEqual(1, code, out)
        self.assertEqual({}, self.token_of('host-A'))
        self.assertIn('inventory of compute node host-A: 1 consumer uses '
                      'it: keep its provider config, or nova-compute does '
                      'not start', out)
        # With it, host-A restarts and its server runs on.
        self.restart('host-A')
        self.assertEqual('ACTIVE',
                         self.api.get_server(server['id'])['status'])
        # Without it, as the line says, it does not.
        os.unlink(self.provider_config)
        self.assertRaises(nova_exception.PlacementPciException,
                          self.restart, 'host-A')
