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

"""An explanation for every preemption, kept in Nova's database and read
with ``opie-manage history`` (issue 27).

A storm: tenant alpha's preemptibles fill four hosts (host-D's locked by
an operator, so no victim there); tenant beta boots normal servers one
after the other, each preempting, on three hosts. ``opie-manage history``
runs as an operator runs it (``manage.main``) but for the nova.conf it
would read: the in-process cloud's database is already configured.
"""
import contextlib
import io
import json
import os
import subprocess
import sys

from nova import context as nova_context
from nova.tests.functional.api import client
from nova import objects

from opie.cmd import manage
from opie.core import scheduling
from opie.nova.request import claim
from opie.nova.request import terminate
from opie.testing import cloud
from tests.functional import test_preemption
from tests.functional import test_victims_left_running

# Partial billing hours lost, in minutes, of each host's preemptibles.
MINUTES = {'host-A': (65, 100, 105, 110), 'host-B': (70, 101, 106, 111),
           'host-C': (75, 102, 107, 112), 'host-D': (61, 62, 63, 64)}
# Each request of beta, and where its victims are: the cheapest sets.
STORM = (('medium', 'N1', 'host-A', ['A-0']),
         ('medium', 'N2', 'host-B', ['B-0']),
         ('medium', 'N3', 'host-C', ['C-0']),
         ('large', 'N4', 'host-A', ['A-1', 'A-2']))


def tenant(test, name):
    api = client.TestOpenStackClient(
        name, test.api_fixture.base_url, project_id=name + '-project',
        roles=['reader', 'member'])
    api.microversion = 'latest'
    return api


class Storm(cloud.OpieCloud):
    HOSTS = ('host-A', 'host-B', 'host-C', 'host-D')

    def setUp(self):
        super().setUp()
        self.alpha, self.beta = tenant(self, 'alpha'), tenant(self, 'beta')
        self.uuids = {}
        for host, minutes in MINUTES.items():
            for i, m in enumerate(minutes):
                name = '%s-%d' % (host[-1], i)
                server = self.seed('medium', name, host=host,
                                   preemptible=True, minutes=m)
                self.own(server['id'], self.alpha)
                self.uuids[name] = server['id']
                if host == 'host-D':
                    self.lock_as_operator(server['id'])
        self.servers = {}
        for size, name, host, victims in STORM:
            server = self.boot(size, name, api=self.beta)
            self.servers[name] = server
            self.wait_for_terminations()
            self.assertEqual(host, self.host_of(server))

    def own(self, uuid, api):
        """Give the server to ``api``'s tenant (only an admin chooses the
        host a server boots on)."""
        admin = nova_context.get_admin_context()
        mapping = objects.InstanceMapping.get_by_instance_uuid(admin, uuid)
        with nova_context.target_cell(admin, mapping.cell_mapping) as cctxt:
            instance = objects.Instance.get_by_uuid(cctxt, uuid)
            instance.project_id = api.project_id
            instance.user_id = api.auth_user
            instance.save()
        mapping.project_id = api.project_id
        mapping.save()

    def history(self, *argv):
        self.stub_out('opie.cmd.history.load_nova',
                      lambda args: nova_context.get_admin_context())
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(0, manage.main(
                ['history', '--config-file', 'nova.conf'] + list(argv)))
        return out.getvalue()

    def entries(self, *argv):
        return json.loads(self.history('-f', 'json', *argv))

    def test_history_explains_each_preemption_of_the_storm(self):
        entries = self.entries()
        self.assertEqual(
            [(self.servers[name]['id'], host, sorted(
                self.uuids[v] for v in victims))
             for _, name, host, victims in STORM],
            [(e['request']['instance_uuid'], e['host'],
              sorted(e['recorded'])) for e in entries])
        notified = {n['payload']['instance_uuid']: n['payload']
                    for n in self.preempt_notifications()}
        for entry in entries:
            request = entry['request']
            self.assertEqual('beta-project', request['project_id'])
            self.assertEqual(('nova', 'victims', 'request'),
                             (entry['ranked_by'], entry['ranking'],
                              entry['reason']))
            self.assertEqual({'alpha-project'},
                             {v['project_id'] for v in entry['victims']})
            self.assertEqual({'preemptible.medium'},
                             {v['flavor'] for v in entry['victims']})
            self.assertEqual(sorted(entry['recorded']),
                             sorted(v['uuid'] for v in entry['victims']))
            # Period costs: the set's is its victims' sum.
            self.assertAlmostEqual(
                entry['cost'], sum(v['cost'] for v in entry['victims']))
            self.assertEqual(0, entry['offset'])
            # host-D: its operator-locked preemptibles count as normal.
            self.assertEqual({scheduling.NO_ROOM_NORMAL: 1}, entry['refused'],
                             json.dumps(entries, indent=1))
            self.assertTrue(entry['why'].startswith('the lowest cost'),
                            entry['why'])
            # Every runner-up lost on cost, and says by how much.
            for other in entry['runners_up']:
                self.assertGreater(other['cost'], entry['cost'])
                self.assertTrue(other['why_lost'].startswith(
                    'its victims cost %r > %r' % (
                        round(other['cost'], 6), round(entry['cost'], 6))),
                    other['why_lost'])
                self.assertIsInstance(other['weight'], float)
            # The notification carried the same explanation.
            payload = notified[request['instance_uuid']]
            self.assertEqual(entry['why'], payload['explanation']['why'])
            self.assertEqual(
                [o['why_lost'] for o in entry['runners_up']],
                [o['why_lost'] for o in payload['explanation']['runners_up']])
            self.assertEqual({v['uuid']: v['cost'] for v in entry['victims']},
                             {v['uuid']: v['cost'] for v in
                              payload['victims']})
        # The first request saw three hosts that could take it.
        first = entries[0]
        self.assertEqual('the lowest cost (%r) of 3 hosts that could take '
                         'it' % round(first['cost'], 6), first['why'])
        self.assertEqual(['host-B', 'host-C'],
                         [o['host'] for o in first['runners_up']])
        # The large one: two victims, one entry.
        self.assertEqual(2, len(entries[-1]['victims']))

    def test_filters(self):
        def requests(*argv):
            return [e['request']['instance_uuid'] for e in
                    self.entries(*argv)]
        ids = {name: s['id'] for name, s in self.servers.items()}
        self.assertEqual([ids['N1'], ids['N4']], requests('--host', 'host-A'))
        self.assertEqual([], requests('--host', 'host-D'))
        self.assertEqual(4, len(requests('--project', 'alpha-project')))
        self.assertEqual([], requests('--project', 'beta-project'))
        self.assertEqual(4, len(requests('--requester-project',
                                         'beta-project')))
        self.assertEqual([], requests('--requester-project',
                                      'alpha-project'))
        entries = self.entries()
        second = entries[1]['time']
        self.assertEqual([ids['N2'], ids['N3'], ids['N4']],
                         requests('--since', second))
        self.assertEqual([ids['N1']], requests('--until', second))
        self.assertEqual([], requests('--since', '2999-01-01'))

    def test_the_table(self):
        text = self.history('--host', 'host-B')
        lines = text.splitlines()
        self.assertIn('  host-B  for server %s of project beta-project '
                      '(flavor medium: 2 vCPU, 4000 MB, 40 GB)'
                      % self.servers['N2']['id'], lines[0])
        self.assertTrue(lines[1].startswith('  why: the lowest cost'))
        self.assertIn('  victim %s  project alpha-project  flavor '
                      'preemptible.medium  cost ' % self.uuids['B-0'], text)
        self.assertIn('  refused by 1 host: %s' % scheduling.NO_ROOM_NORMAL,
                      lines)

    def test_owner_sees_the_event_not_the_explanation(self):
        victim = self.uuids['B-0']
        for api, sees in ((self.alpha, False), (self.admin_api, True)):
            api.microversion = '2.84'
            [action] = [a for a in api.get_instance_actions(victim)
                        if a['action'] == terminate.ACTION]
            details = api.get_instance_action_details(
                victim, action['request_id'])
            [event] = [e for e in details['events']
                       if e['event'] == terminate.EVENT]
            self.assertEqual('Success', event['result'])
            self.assertEqual(sees, 'details' in event)
            self.assertEqual(sees, 'host' in event)
            if sees:
                explanation = json.loads(event['details'])
                self.assertEqual('host-B', explanation['host'])
                self.assertEqual('beta-project',
                                 explanation['request']['project_id'])
        # Another tenant sees nothing of the victim.
        self.assertRaises(client.OpenStackApiNotFoundException,
                          self.beta.get_instance_actions, victim)

    def test_an_explanation_is_written_once_per_victim(self):
        victim = self.uuids['C-0']
        admin = nova_context.get_admin_context()
        cell = objects.InstanceMapping.get_by_instance_uuid(
            admin, victim).cell_mapping

        def events():
            with nova_context.target_cell(admin, cell) as cctxt:
                [action] = [
                    a for a in objects.InstanceActionList.get_by_instance_uuid(
                        cctxt, victim) if a.action == terminate.ACTION]
                return [e for e in
                        objects.InstanceActionEventList.get_by_action(
                            cctxt, action.id)
                        if e.event == terminate.EVENT]
        [kept] = events()
        # A termination retried (a shelve that failed after its action, the
        # reconciler after a dead worker) records nothing more.
        terminate.Terminator._record_action(cell, victim, 'host-C',
                                            '{"why": "later"}')
        self.assertEqual([kept.details], [e.details for e in events()])

    def test_an_action_its_writer_left_without_explanation_gets_one(self):
        victim = self.uuids['A-3']   # never preempted: no action yet
        admin = nova_context.get_admin_context()
        cell = objects.InstanceMapping.get_by_instance_uuid(
            admin, victim).cell_mapping
        with nova_context.target_cell(admin, cell) as cctxt:
            # The writer died between the action and its event.
            objects.InstanceAction.action_start(cctxt, victim,
                                                terminate.ACTION)
        terminate.Terminator._record_action(cell, victim, 'host-A',
                                            '{"why": "kept"}')
        terminate.Terminator._record_action(cell, victim, 'host-A',
                                            '{"why": "twice"}')
        actions = self.admin_api.get_instance_actions(victim)
        [action] = [a for a in actions if a['action'] == terminate.ACTION]
        self.admin_api.microversion = '2.84'
        details = self.admin_api.get_instance_action_details(
            victim, action['request_id'])
        self.assertEqual(['{"why": "kept"}'],
                         [e['details'] for e in details['events']
                          if e['event'] == terminate.EVENT])


class ClaimRefused(cloud.OpieCloud):
    """The cheapest host keeps changing under every claim (other writers):
    Nova goes on to the next, and the explanation says why the first
    lost."""

    def test_a_host_ranked_above_says_its_claim_failed(self):
        test_preemption.fill_with_preemptibles(self)
        busy = self._get_provider_uuid_by_host('host-B')
        real = claim.write

        def write(client, context, rp, *args, **kwargs):
            if rp == busy:
                return None
            return real(client, context, rp, *args, **kwargs)
        self.stub_out('opie.nova.request.claim.write', write)
        server = self.boot('medium', 'normal')
        self.wait_for_terminations()
        self.assertEqual('host-A', self.host_of(server))

        [payload] = [n['payload'] for n in self.preempt_notifications()]
        explanation = payload['explanation']
        self.assertEqual('the only host left that could take it; 1 host '
                         'ranked above it could not be claimed',
                         explanation['why'])
        [other] = explanation['runners_up']
        self.assertEqual(
            ('host-B', 'ranked above it, but its claim failed: it changed '
             'under each of its claims (other writers)'),
            (other['host'], other['why_lost']))


class ReconcilerExplains(test_victims_left_running.AttackBase):

    def test_a_victim_left_running_is_explained_without_a_request(self):
        # A worker took B-2 and died; a normal server took its room.
        victim = self.claim_without_terminating('B-2', 'host-B')
        self.reconcile_passes(2)
        self.stub_out('opie.cmd.history.load_nova',
                      lambda args: nova_context.get_admin_context())
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            manage.main(['history', '--config-file', 'nova.conf', '-f',
                         'json'])
        [entry] = json.loads(out.getvalue())
        self.assertEqual(('claimed', None, 'host-B', [victim]),
                         (entry['reason'], entry['request'], entry['host'],
                          entry['recorded']))
        self.assertTrue(entry['why'].startswith(
            'reconciler: claimed by a scheduler that never terminated it'),
            entry['why'])
        self.assertEqual(self.member.project_id,
                         entry['victims'][0]['project_id'])


def test_bad_nova_conf_is_one_line(tmp_path):
    """In its own process: it parses Nova's global configuration."""
    empty = tmp_path / 'nova.conf'
    empty.write_text('[DEFAULT]\n')
    for argv, says in (
            (['--config-file', str(tmp_path / 'missing.conf')],
             'opie-manage history: error: Failed to find some config '
             'files: %s' % (tmp_path / 'missing.conf')),
            (['--config-file', str(empty)],
             "opie-manage history: error: cannot read Nova's database "
             'with %s: ' % empty)):
        done = subprocess.run(
            [sys.executable, '-m', 'opie.cmd.manage', 'history'] + argv,
            capture_output=True, text=True, env=dict(os.environ),
            timeout=120)
        assert done.returncode == 2, done
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert done.stderr.startswith(says), done.stderr
