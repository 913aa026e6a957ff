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

"""opie-manage snapshot, then plan on it, agrees with the scheduler."""
import json
import os

from tests.functional import test_audit
from tests.functional import test_preemption
from tests.functional import test_tiers


def plan_then_boot(test):
    """``opie-manage plan`` of a medium normal server on a snapshot of
    ``test``'s cloud, then the server booted for real: (the plan as JSON,
    the server, its victims terminated)."""
    path = os.path.join(test.config_dir, 'cloud.json')
    code, _, err = test.opie_manage('snapshot', '--output', path)
    test.assertEqual(0, code, err)
    code, out, err = test.opie_manage('plan', '--snapshot', path, '--flavor',
                                      'medium', '--format', 'json')
    test.assertEqual(0, code, err)
    server = test.boot('medium', 'normal')
    test.wait_for_terminations()
    return json.loads(out), server


class Snapshot(test_audit.AuditCloud):

    def setUp(self):
        super().setUp()
        test_preemption.fill_with_preemptibles(self)

    def test_plan_on_the_snapshot_is_what_the_scheduler_does(self):
        planned, server = plan_then_boot(self)

        self.assertEqual(planned['host'], self.host_of(server))
        self.assertEqual(sorted(planned['victims']),
                         sorted(self.victim_uuids()))
        # The cheapest single victim of fill_with_preemptibles.
        self.assertEqual([self.server_id('B-2')], planned['victims'])

    def server_id(self, name):
        return [s['id'] for s in self.admin_api.get_servers(
            detail=False, search_opts={'all_tenants': 1, 'deleted': 1})
            if s['name'] == name][0]

    def test_the_snapshot_lists_hosts_inventory_and_instances(self):
        code, out, err = self.opie_manage('snapshot')

        self.assertEqual(0, code, err)
        document = json.loads(out)
        self.assertEqual(['host-A', 'host-B'],
                         [h['name'] for h in document['hosts']])
        host = document['hosts'][0]
        self.assertEqual((8, 16384, 1000), (host['vcpus'], host['memory_mb'],
                                            host['disk_gb']))
        self.assertEqual(4, len(host['instances']))
        self.assertTrue(all(i['preemptible'] for i in host['instances']))
        self.assertIn('medium', document['flavors'])


class TieredSnapshot(test_tiers.TermsCloud, test_audit.AuditCloud):
    """Terms set with opie-manage flavor set-terms reach the scheduler and
    the snapshot alike."""

    def test_set_terms_then_plan_on_the_snapshot_agrees(self):
        self.flavor('gold')
        self.flavor('bronze')
        code, out, err = self.opie_manage('flavor', 'set-terms', 'gold',
                                          '--tier', '1',
                                          '--minimum-uptime', '600')
        self.assertEqual(0, code, err)
        for i in range(4):
            self.boot_as('gold', 'gold-%d' % i, 'host-A', 61 + i)
            self.boot_as('bronze', 'bronze-%d' % i, 'host-B', 110 + i)
        planned, server = plan_then_boot(self)

        with open(os.path.join(self.config_dir, 'cloud.json')) as f:
            document = json.load(f)
        self.assertEqual((1, 600), (document['flavors']['gold']['tier'],
                                    document['flavors']['gold'][
                                        'minimum_uptime']))
        self.assertEqual({self.api_fixture.project_id}, {
            i['project_id'] for h in document['hosts']
            for i in h['instances']})
        self.assertEqual('host-B', self.host_of(server))
        self.assertEqual(planned['host'], self.host_of(server))
        self.assertEqual(planned['victims'], self.victim_uuids())
        code, out, _ = self.opie_manage('flavor', 'list')
        self.assertIn('gold', out)
        self.assertRegex(out, r'\ngold +2 vCPU, 4000 MB RAM, 40 GB disk +1 '
                              r'+600 s +default +default\n')
