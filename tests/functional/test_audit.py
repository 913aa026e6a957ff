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

"""``opie-manage audit`` and ``flavor create-preemptible`` on a real cloud.

The in-process cloud of :mod:`opie.testing.cloud` is set up right, so the
audit passes on it (acceptance of issue 6); each broken setup below is then
reported with its own message. ``opie-manage`` runs as an operator runs it
(``manage.main``), reaching the cloud's compute API and Placement over HTTP
with novaclient and keystoneauth1; only the clouds.yaml lookup is replaced
by a session on the in-process endpoints.
"""
import contextlib
import io
import os

import fixtures
from keystoneauth1 import plugin
from keystoneauth1 import session as ks_session
import nova.conf

from opie.cmd import cloud as cmd_cloud
from opie.cmd import manage
from opie.testing import cloud

CONF = nova.conf.CONF
OPIE_FILTER = 'opie.nova.filters.PreemptibleFilter'


class InProcessAuth(plugin.BaseAuthPlugin):
    """An admin of the in-process cloud: Nova's stubbed keystone middleware
    reads the identity from headers, Placement's noauth2 from the token."""

    def __init__(self, endpoints, project_id):
        super().__init__()
        self.endpoints = endpoints
        self.project_id = project_id

    def get_headers(self, session, **kwargs):
        return {'X-Auth-Token': 'admin', 'X-Auth-User': 'admin',
                'X-User-Id': 'admin', 'X-Auth-Project-Id': self.project_id,
                'X-Roles': 'reader,member,admin'}

    def get_endpoint(self, session, service_type=None, **kwargs):
        return self.endpoints[service_type]


def nova_conf_text(changes):
    """The nova.conf the in-process cloud runs with (from Nova's CONF), with
    ``changes`` ({(section, option): value or None to leave out})."""
    values = {
        ('DEFAULT', 'cpu_allocation_ratio'): CONF.cpu_allocation_ratio,
        ('DEFAULT', 'ram_allocation_ratio'): CONF.ram_allocation_ratio,
        ('DEFAULT', 'disk_allocation_ratio'): CONF.disk_allocation_ratio,
        ('DEFAULT', 'reserved_host_memory_mb'):
            CONF.reserved_host_memory_mb,
        ('DEFAULT', 'shelved_offload_time'): CONF.shelved_offload_time,
        ('filter_scheduler', 'available_filters'):
            CONF.filter_scheduler.available_filters,
        ('filter_scheduler', 'enabled_filters'):
            ','.join(CONF.filter_scheduler.enabled_filters),
        ('filter_scheduler', 'weight_classes'):
            ','.join(CONF.filter_scheduler.weight_classes),
        ('filter_scheduler', 'host_subset_size'):
            CONF.filter_scheduler.host_subset_size,
        ('compute', 'provider_config_location'):
            CONF.compute.provider_config_location,
        ('opie', 'costs'): CONF.opie.costs,
        ('opie', 'termination_mode'): CONF.opie.termination_mode,
        ('opie', 'heartbeat_path'): CONF.opie.heartbeat_path,
        ('opie', 'heartbeat_interval'): CONF.opie.heartbeat_interval,
    }
    values.update(changes)
    lines, section = [], None
    for (group, option), value in sorted(values.items()):
        if group != section:
            lines.append('[%s]' % group)
            section = group
        for item in value if isinstance(value, list) else [value]:
            if item is not None:
                lines.append('%s = %s' % (option, item))
    return '\n'.join(lines) + '\n'


class AuditCloud(cloud.OpieCloud):

    def setUp(self):
        super().setUp()
        auth = InProcessAuth(
            {'compute': self.api_fixture.base_url,
             'placement': self.placement_fixture.endpoint},
            self.api_fixture.project_id)
        conn = cmd_cloud.Cloud(ks_session.Session(auth=auth))
        self.useFixture(fixtures.MockPatchObject(
            cmd_cloud, 'connect', return_value=conn))
        self.config_dir = self.useFixture(fixtures.TempDir()).path
        if self.MANAGER is not None:
            # What the periodic task of opie-scheduler does (the stock
            # manager has none).
            self.scheduler.manager._opie_heartbeat(None)

    def opie_manage(self, *args):
        """Run opie-manage; (exit code, stdout, stderr)."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = manage.main(list(args))
        print('$ opie-manage %s  -> %d\n%s%s' % (
            ' '.join(args), code, out.getvalue(), err.getvalue()))
        return code, out.getvalue(), err.getvalue()

    def audit(self, *args, changes=None):
        """Audit the cloud's nova.conf, with ``changes``, and ``args``."""
        path = os.path.join(self.config_dir, 'nova.conf')
        with open(path, 'w') as f:
            f.write(nova_conf_text(changes or {}))
        return self.opie_manage('audit', '--config-file', path, *args)

    def assert_one_problem(self, output, subject, message):
        problems = [line for line in output.splitlines()
                    if line.startswith('PROBLEM ')]
        self.assertEqual(1, len(problems), output)
        self.assertTrue(problems[0].startswith('PROBLEM %s: ' % subject),
                        problems[0])
        self.assertIn(message, problems[0])
        self.assertIn('\n    fix: ', output)
        self.assertIn('1 problem; checked ', output)

    def flavor(self, name):
        return [f for f in self.api.get_flavors() if f['name'] == name][0]

    def extra_specs(self, flavor_id):
        return self.api.api_get('/flavors/%s/os-extra_specs'
                                % flavor_id).body['extra_specs']


class CorrectCloud(AuditCloud):

    def test_audit_passes(self):
        flavors = self.api.api_get('/flavors?is_public=None').body['flavors']

        code, out, err = self.audit('--cloud')

        self.assertEqual(0, code)
        self.assertEqual('', err)
        self.assertEqual(
            'OK, no problem; checked %s/nova.conf (scheduler and compute); '
            'cloud: %d flavors (3 preemptible), 2 compute nodes\n'
            % (self.config_dir, len(flavors)), out)

    def test_audit_reads_every_page(self):
        flavors = self.api.api_get('/flavors?is_public=None').body['flavors']
        # Nova answers at most one flavor or compute node per request.
        self.flags(max_limit=1, group='api')

        code, out, err = self.audit('--cloud')

        self.assertEqual(0, code)
        self.assertIn('cloud: %d flavors (3 preemptible), 2 compute nodes\n'
                      % len(flavors), out)

    def test_created_twin_passes_the_audit_and_boots(self):
        code, out, _ = self.opie_manage('flavor', 'create-preemptible',
                                        'large', '--name', 'spot.large')

        self.assertEqual(0, code)
        self.assertTrue(out.startswith('created flavor spot.large (id '))
        twin = self.flavor('spot.large')
        self.assertEqual((4, 8000, 80), (twin['vcpus'], twin['ram'],
                                         twin['disk']))
        self.assertEqual(
            cloud.preemptible_specs(4, 8000, 80),
            self.extra_specs(twin['id']))
        self.assertEqual(0, self.audit('--cloud')[0])
        server = self._create_server(flavor_id=twin['id'], networks='none')
        usage = self.usage(server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual((0, 4, 8000), (
            usage['VCPU'], usage['CUSTOM_PREEMPTIBLE_VCPU'],
            usage['CUSTOM_PREEMPTIBLE_MEMORY_MB']))

    def test_twin_of_a_private_flavor_is_private_to_the_same_projects(self):
        private = self.api.post_flavor({'flavor': {
            'name': 'tenant.small', 'vcpus': 1, 'ram': 512, 'disk': 1,
            'swap': 1500, 'os-flavor-access:is_public': False}})
        self.api.api_post('/flavors/%s/action' % private['id'],
                          {'addTenantAccess': {'tenant': 'batch-team'}})

        code, _, _ = self.opie_manage('flavor', 'create-preemptible',
                                      private['id'])

        self.assertEqual(0, code)
        twin = self.api.api_get('/flavors/detail?is_public=None').body[
            'flavors']
        twin = [f for f in twin if f['name'] == 'tenant.small-preemptible'][0]
        self.assertFalse(twin['os-flavor-access:is_public'])
        access = self.api.api_get('/flavors/%s/os-flavor-access'
                                  % twin['id']).body['flavor_access']
        self.assertEqual(['batch-team'], [a['tenant_id'] for a in access])
        specs = self.extra_specs(twin['id'])
        # 1 GB root disk and 1500 MB swap, rounded up: 3 GB.
        self.assertEqual('3', specs['resources:CUSTOM_PREEMPTIBLE_DISK_GB'])

    def test_create_again_is_harmless_and_clashes_are_refused(self):
        code, out, _ = self.opie_manage('flavor', 'create-preemptible',
                                        'small', '--name', 'preemptible.small')
        self.assertEqual(0, code)
        self.assertIn('flavor preemptible.small (id %s) is already the '
                      'preemptible twin of small: left unchanged'
                      % self.preemptible['small'], out)

        code, _, err = self.opie_manage('flavor', 'create-preemptible',
                                        'small', '--name', 'medium')
        self.assertEqual(2, code)
        self.assertEqual(
            'opie-manage flavor: error: flavor medium already exists and is '
            'not a preemptible flavor of 1 vCPU, 2000 MB RAM, 20 GB disk: '
            'choose another --name, or delete it first\n', err)

        code, _, err = self.opie_manage('flavor', 'create-preemptible',
                                        'preemptible.small')
        self.assertEqual(2, code)
        self.assertIn('flavor preemptible.small is already preemptible', err)

        code, _, err = self.opie_manage('flavor', 'create-preemptible', 'xl')
        self.assertEqual(2, code)
        self.assertIn("no flavor with name or id 'xl'", err)


class BrokenFlavors(AuditCloud):

    def test_missing_resource_override(self):
        self.api.api_delete('/flavors/%s/os-extra_specs/resources:VCPU'
                            % self.preemptible['medium'])

        code, out, _ = self.audit('--cloud')

        self.assertEqual(1, code)
        self.assert_one_problem(
            out, 'flavor preemptible.medium',
            'resources:VCPU is missing, expected 0 for a preemptible flavor '
            'of 2 vCPU, 4000 MB RAM, 40 GB disk')
        self.assertIn('fix: opie-manage flavor set-preemptible '
                      'preemptible.medium', out)

    def test_the_fix_given_sets_a_marked_flavor_right(self):
        flavor_id = self._create_flavor(
            name='marked', vcpu=2, memory_mb=4000, disk=40, ephemeral=0,
            extra_spec={'opie:preemptible': 'true'})
        code, out, _ = self.audit('--cloud')
        self.assertEqual(1, code)
        self.assertEqual(6, out.count(
            'fix: opie-manage flavor set-preemptible marked'))

        code, out, _ = self.opie_manage('flavor', 'set-preemptible', 'marked')

        self.assertEqual(0, code)
        self.assertIn('set on flavor marked (id %s), 2 vCPU, 4000 MB RAM, '
                      '40 GB disk:' % flavor_id, out)
        self.assertEqual(cloud.preemptible_specs(2, 4000, 40),
                         self.extra_specs(flavor_id))
        self.assertEqual(0, self.audit('--cloud')[0])

    def test_a_bad_term_and_the_fix_given(self):
        self.admin_api.post_extra_spec(self.preemptible['medium'], {
            'extra_specs': {'opie:tier': 'gold'}})

        code, out, _ = self.audit('--cloud')
        self.assertEqual(1, code)
        self.assert_one_problem(
            out, 'flavor preemptible.medium',
            "opie:tier='gold' is not a whole number from 0 to 1000, so the "
            "scheduler reads it as tier 0")
        self.assertIn('fix: opie-manage flavor set-terms preemptible.medium '
                      '--tier N', out)

        code, _, _ = self.opie_manage('flavor', 'set-terms',
                                      'preemptible.medium', '--tier', '1')

        self.assertEqual(0, code)
        self.assertEqual(0, self.audit('--cloud')[0])

    def test_custom_amount_that_is_not_the_flavor_size(self):
        specs = cloud.preemptible_specs(1, 2000, 20)
        specs['resources:CUSTOM_PREEMPTIBLE_MEMORY_MB'] = '1000'
        self._create_flavor(name='cheat', vcpu=1, memory_mb=2000, disk=20,
                            ephemeral=0, extra_spec=specs)

        code, out, _ = self.audit('--cloud')

        self.assertEqual(1, code)
        self.assert_one_problem(
            out, 'flavor cheat',
            "resources:CUSTOM_PREEMPTIBLE_MEMORY_MB is '1000', expected 2000")

    def test_custom_classes_without_the_mark(self):
        specs = cloud.preemptible_specs(1, 2000, 20)
        del specs['opie:preemptible']
        self._create_flavor(name='unmarked', vcpu=1, memory_mb=2000,
                            disk=20, ephemeral=0, extra_spec=specs)

        code, out, _ = self.audit('--cloud')

        self.assertEqual(1, code)
        self.assert_one_problem(out, 'flavor unmarked',
                                'but is not marked opie:preemptible=true')

    def test_pinned_preemptible_flavor(self):
        self.api.post_extra_spec(self.preemptible['large'],
                                 {'extra_specs': {'hw:cpu_policy':
                                                  'dedicated'}})

        code, out, _ = self.audit('--cloud')

        self.assertEqual(1, code)
        self.assert_one_problem(out, 'flavor preemptible.large',
                                'preemptible flavors cannot use CPU pinning')


class BrokenComputes(AuditCloud):

    def test_compute_without_provider_config(self):
        empty = self.useFixture(fixtures.TempDir()).path
        self.flags(provider_config_location=empty, group='compute')
        self._start_compute('host-C')

        code, out, _ = self.opie_manage('audit', '--cloud')

        self.assertEqual(1, code)
        self.assert_one_problem(
            out, 'compute node host-C',
            'has no inventory of CUSTOM_PREEMPTIBLE_VCPU, '
            'CUSTOM_PREEMPTIBLE_MEMORY_MB, CUSTOM_PREEMPTIBLE_DISK_GB, '
            'CUSTOM_OPIE_HOST')
        # The same compute's nova.conf says why.
        code, out, _ = self.audit('--role', 'compute')
        self.assert_one_problem(out, 'provider config %s' % empty,
                                'gives no inventory of')

    def test_ratio_raised_without_new_provider_config(self):
        self.flags(cpu_allocation_ratio=2.0)
        self._run_periodics()

        code, out, _ = self.opie_manage('audit', '--cloud')

        self.assertEqual(1, code)
        self.assertIn('PROBLEM compute node host-A: CUSTOM_PREEMPTIBLE_VCPU '
                      'capacity is 8 but VCPU capacity is 16, so preemptible '
                      'servers can use less than the host', out)
        self.assertIn('2 problems; checked ', out)
        code, out, _ = self.audit('--role', 'compute')
        self.assert_one_problem(
            out, 'provider config %s' % CONF.compute.provider_config_location,
            'CUSTOM_PREEMPTIBLE_VCPU has allocation_ratio 1.0 but nova.conf '
            'gives the standard class 2.0')


class BrokenSchedulerConf(AuditCloud):

    def test_filter_left_out(self):
        enabled = [f for f in CONF.filter_scheduler.enabled_filters
                   if f != 'PreemptibleFilter']

        code, out, _ = self.audit(changes={
            ('filter_scheduler', 'enabled_filters'): ','.join(enabled)})

        self.assertEqual(1, code)
        self.assert_one_problem(
            out, 'nova.conf [filter_scheduler] enabled_filters',
            'PreemptibleFilter is not enabled')

    def test_filter_not_loaded(self):
        code, out, _ = self.audit(changes={
            ('filter_scheduler', 'available_filters'):
                'nova.scheduler.filters.all_filters'})

        self.assertEqual(1, code)
        self.assert_one_problem(
            out, 'nova.conf [filter_scheduler] available_filters',
            '%s is not loaded' % OPIE_FILTER)

    def test_weigher_left_out(self):
        code, out, _ = self.audit(changes={
            ('filter_scheduler', 'weight_classes'):
                'nova.scheduler.weights.all_weighers'})

        self.assertEqual(1, code)
        self.assert_one_problem(
            out, 'nova.conf [filter_scheduler] weight_classes',
            'opie.nova.weights.overcommit.OvercommitWeigher and '
            'opie.nova.weights.preemption_cost.PreemptionCostWeigher '
            'missing')

    def test_scheduler_not_restarted_after_a_cost_change(self):
        code, out, _ = self.audit(changes={
            ('opie', 'costs'): 'period,count=60'})

        self.assertEqual(1, code)
        self.assert_one_problem(
            out, 'opie-scheduler on this host',
            'runs with costs = period=1 (heartbeat %s) but nova.conf says '
            'period=1,count=60' % CONF.opie.heartbeat_path)


class ShelveWithoutOffload(AuditCloud):
    OPIE = {'termination_mode': 'shelve'}

    def test_shelve_needs_offload_and_a_service_user(self):
        self.flags(shelved_offload_time=-1)

        code, out, _ = self.audit()

        self.assertEqual(1, code)
        self.assertIn('PROBLEM nova.conf [opie] auth_type: termination_mode '
                      '= shelve needs service user credentials', out)
        self.assertIn('PROBLEM nova.conf [DEFAULT] shelved_offload_time: is '
                      '-1 while [opie] termination_mode = shelve', out)
        self.assertIn('2 problems; checked ', out)


class StockScheduler(AuditCloud):
    """nova-scheduler still runs the stock manager: the cloud looks right
    through the APIs, only the missing heartbeat gives it away."""
    MANAGER = None

    def test_no_heartbeat(self):
        code, out, _ = self.audit('--cloud')

        self.assertEqual(1, code)
        self.assert_one_problem(
            out, 'opie-scheduler on this host',
            'no heartbeat in %s: the OPIE scheduler manager is not running'
            % CONF.opie.heartbeat_path)
