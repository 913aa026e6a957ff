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

"""Preemption budgets per project, through a real Nova and Placement.

A budget is a hard constraint of the victim search (issue 27): a request
that only a budget-breaking set could serve fails, and its fault says why;
two schedulers spending the last of one budget at once never end over it
(Placement checks the ledger's capacity in the write that takes the
victims, :mod:`opie.nova.request.ledger`); charges expire after the window; the
charges of a request's first instance count for its second. Budgets are
set with ``opie-manage budget``, run as in :mod:`tests.functional.
test_audit`.

Charges, with the medium flavor (2 vCPUs), in vCPU-minutes: 2 per started
minute of run time, at most the window. A victim that ran 65 minutes when
the request came costs 132 (its 66th minute has started), 80 minutes 162,
85 minutes 172: budgets here leave a minute of slack for a slow test.
"""
import dataclasses
import datetime
import json

from nova import context as nova_context
from nova import objects
from nova.scheduler.client import report
from oslo_utils import timeutils

from opie.cmd import cloud as cmd_cloud
from opie.cmd import rollback
from opie.core import scheduling
from opie.nova.request import ledger
from tests.functional import test_audit
from tests.functional import test_preemption


class Budgets(test_audit.AuditCloud):

    def setUp(self):
        super().setUp()
        # The project of the servers the tests boot.
        self.project = self.api_fixture.project_id

    def set_budget(self, vcpu_hours, project=None):
        code, out, err = self.opie_manage(
            'budget', 'set', project or self.project, '--vcpu-hours',
            str(vcpu_hours))
        self.assertEqual((0, ''), (code, err))
        return out

    def budget_list(self):
        code, out, err = self.opie_manage('budget', 'list', '-f', 'json')
        self.assertEqual((0, ''), (code, err))
        return {b['project_id']: b for b in json.loads(out)}

    def ledger(self, what):
        """Placement's ``what`` of the tests' project's ledger."""
        return self.placement.get('/resource_providers/%s/%s' % (
            ledger.provider_uuid(self.project), what),
            version='1.28').body[what]

    def ledger_usage(self):
        return self.ledger('usages').get(ledger.RESOURCE_CLASS, 0)

    def ledger_capacity(self):
        inventory = self.ledger('inventories')[ledger.RESOURCE_CLASS]
        return inventory['total'] - inventory['reserved']

    def charges(self):
        return self.ledger('allocations')

    def assert_within_budget(self):
        self.assertLessEqual(self.ledger_usage(), self.ledger_capacity())

    def assert_refused_for_budget(self, server):
        self.assertEqual('ERROR', server['status'])
        self.assertIn(scheduling.OVER_BUDGET, server['fault']['message'])

    def names(self):
        return {s['name']: s['id'] for s in self.api.get_servers()}


class BudgetStopsPreemption(Budgets):

    def setUp(self):
        super().setUp()
        test_preemption.fill_with_preemptibles(self)
        self.preemptibles = self.live_names()

    def test_spent_budget_stops_the_preemption_and_the_fault_says_so(self):
        # The cheapest victim, B-2 (65 minutes), would cost 130
        # vCPU-minutes: 2 vCPU-hours is too little for any.
        self.set_budget(2)

        server = self.boot('medium', 'normal', expected_state='ERROR')

        self.assert_refused_for_budget(server)
        self.assertEqual(self.preemptibles, sorted(
            set(self.live_names()) - {'normal'}))
        self.assertEqual([], self.victim_uuids())
        self.assertEqual(0, self.ledger_usage())

    def test_budget_allows_what_it_covers_then_stops(self):
        self.set_budget(3)   # 180 vCPU-minutes: B-2 (132) only
        first = self.boot('medium', 'first')
        self.wait_for_terminations()

        second = self.boot('medium', 'second', expected_state='ERROR')

        self.assertEqual('host-B', first['OS-EXT-SRV-ATTR:host'])
        self.assertNotIn('B-2', self.live_names())
        spent = self.ledger_usage()
        self.assertIn(spent, (132, 134))
        self.assert_refused_for_budget(second)
        self.assertEqual({self.project: {
            'project_id': self.project, 'source': 'set',
            'budget_vcpu_minutes': 180, 'spent_vcpu_minutes': spent,
            'remaining_vcpu_minutes': 180 - spent}}, self.budget_list())

    def test_budget_lowered_below_what_is_spent_leaves_nothing(self):
        self.set_budget(3)
        self.boot('medium', 'first')

        out = self.set_budget(1)
        second = self.boot('medium', 'second', expected_state='ERROR')

        self.assertIn('already spent: none of its servers is preempted '
                      'until charges expire', out)
        self.assert_refused_for_budget(second)
        listed = self.budget_list()[self.project]
        self.assertEqual((60, 0), (listed['budget_vcpu_minutes'],
                                   listed['remaining_vcpu_minutes']))
        self.assertGreater(listed['spent_vcpu_minutes'], 60)

    def test_rollback_removes_the_ledgers_and_their_charges(self):
        self.set_budget(3)
        self.boot('medium', 'first')
        self.assertTrue(self.charges())

        rollback.remove(cmd_cloud.connect(None), [], rollback.Report(False))

        client = self.scheduler.manager.placement_client
        self.assertIsNone(ledger.get(client, None, '/resource_providers/%s'
                                     % ledger.provider_uuid(self.project)))
        self.assertEqual([], ledger.get(
            client, None, '/traits?name=startswith:CUSTOM_OPIE')['traits'])

    def test_budget_of_zero_never_preempts(self):
        out = self.set_budget(0)

        server = self.boot('medium', 'normal', expected_state='ERROR')

        self.assertIn('its servers are never preempted', out)
        self.assert_refused_for_budget(server)
        self.assertEqual(0, self.ledger_capacity())

    def test_another_projects_budget_does_not_count(self):
        self.set_budget(0, project='someone-else')

        server = self.boot('medium', 'normal')

        self.assertEqual('host-B', server['OS-EXT-SRV-ATTR:host'])

    def test_a_spent_budget_sends_the_request_to_dearer_victims(self):
        # host-B's preemptibles, the cheapest (B-2: 5 minutes lost), are
        # another project's, whose budget is 0.
        for name in ('B-0', 'B-1', 'B-2', 'B-3'):
            self.set_project(self.server(name)['id'], 'team-b')
        self.set_budget(0, project='team-b')

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        # host-A's cheapest, A-0 (31 minutes lost), went instead.
        self.assertEqual('host-A', server['OS-EXT-SRV-ATTR:host'])
        everyone = self.admin_api.get_servers(search_opts={
            'all_tenants': '1'})
        self.assertEqual(sorted(set(self.preemptibles) - {'A-0'}
                                | {'normal'}),
                         sorted(s['name'] for s in everyone))

    def set_project(self, uuid, project_id):
        """The server's owner, as its row says (the scheduler reads it)."""
        ctxt = nova_context.get_admin_context()
        mapping = objects.InstanceMapping.get_by_instance_uuid(ctxt, uuid)
        with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
            instance = objects.Instance.get_by_uuid(cctxt, uuid)
            instance.project_id = project_id
            instance.save()

    def test_unset_follows_the_default_again(self):
        self.set_budget(0)
        code, out, _ = self.opie_manage('budget', 'unset', self.project)
        self.assertEqual(0, code)
        self.assertIn('follows the default budget again', out)
        self.assertEqual({}, self.budget_list())

        # No default: no budget.
        server = self.boot('medium', 'normal')

        self.assertEqual('host-B', server['OS-EXT-SRV-ATTR:host'])


class LedgerListing(Budgets):
    """A preempting request lists the ledgers once; on a cloud where no
    budget was ever set, Placement answers it without an error (before,
    it answered 400 for a trait it did not know, on every preempting
    request, and logged it)."""

    def setUp(self):
        super().setUp()
        test_preemption.fill_with_preemptibles(self)
        self.answers = []
        real = report.SchedulerReportClient.get

        def get(client, url, *args, **kwargs):
            resp = real(client, url, *args, **kwargs)
            self.answers.append((url.split('?')[0], resp.status_code))
            return resp
        self.stub_out('nova.scheduler.client.report.SchedulerReportClient.'
                      'get', get)

    def ledger_reads(self):
        return [answer for answer in self.answers
                if answer[0] in ('/traits', '/resource_providers')]

    def test_no_budget_draws_no_error_from_placement(self):
        self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual(1, len(self.victim_uuids()))
        self.assertEqual([], [a for a in self.answers if a[1] >= 400])
        self.assertEqual([('/traits', 200)], self.ledger_reads())

    def test_a_worker_that_saw_a_ledger_lists_at_once(self):
        self.set_budget(100)
        self.boot('medium', 'first')
        self.wait_for_terminations()
        self.boot('medium', 'second')
        self.wait_for_terminations()

        self.assertEqual([], [a for a in self.answers if a[1] >= 400])
        self.assertEqual([('/traits', 200), ('/resource_providers', 200),
                          ('/resource_providers', 200)],
                         self.ledger_reads())

    def test_ledgers_rolled_back_since_read_as_none(self):
        # The worker saw the traits; a rollback deletes them since.
        self.set_budget(100)
        self.boot('medium', 'first')
        self.wait_for_terminations()
        rollback.remove(cmd_cloud.connect(None), [], rollback.Report(False))

        server = self.boot('medium', 'second')

        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual(('/resource_providers', 400),
                         self.ledger_reads()[-1])

    def test_a_worker_asks_first_again_after_a_rollback(self):
        # Rolled back under a worker that saw the traits (--force): one
        # refused listing, not one per request until it restarts.
        self.set_budget(100)
        self.boot('medium', 'first')
        rollback.remove(cmd_cloud.connect(None), [], rollback.Report(False))
        self.answers.clear()

        self.boot('medium', 'second')
        self.boot('medium', 'third')

        self.assertEqual([('/resource_providers', 400), ('/traits', 200)],
                         self.ledger_reads())

    def test_a_budget_set_again_after_a_rollback_binds_every_worker(self):
        # Worker A (the test's scheduler) saw the traits before the
        # rollback; worker B asked before any ledger, and saw none.
        other = self.other_worker()
        with self.served_by(other):
            self.boot('medium', 'b-free')
        self.set_budget(100)
        self.boot('medium', 'a-first')
        rollback.remove(cmd_cloud.connect(None), [], rollback.Report(False))
        self.boot('medium', 'a-free')

        # 0: any preemption of the project breaks it.
        self.set_budget(0)
        refused = self.boot('medium', 'a-refused', expected_state='ERROR')
        with self.served_by(other):
            # Its fault says only ExpectedException (the second worker is
            # called in-process): refused all the same, nothing taken.
            self.boot('medium', 'b-refused', expected_state='ERROR')

        self.assert_refused_for_budget(refused)
        self.wait_for_terminations()
        self.assertEqual(3, len(self.victim_uuids()))
        self.assertEqual(0, self.ledger_usage())

    def test_a_ledger_half_written_reads_as_none_then_binds(self):
        # An operator's budget set, half-way: the traits, no provider yet.
        client = self.scheduler.manager.placement_client
        for name in (ledger.TRAIT, ledger.SET_TRAIT):
            ledger._send(client, None, 'put', '/traits/%s' % name)

        self.boot('medium', 'first')
        self.set_budget(0)
        second = self.boot('medium', 'second', expected_state='ERROR')

        self.assertEqual([], [a for a in self.answers if a[1] >= 400])
        self.assertEqual([('/traits', 200), ('/resource_providers', 200),
                          ('/resource_providers', 200)],
                         self.ledger_reads())
        self.assert_refused_for_budget(second)


class DefaultBudget(Budgets):
    OPIE = {'preemption_budget_vcpu_hours': 3,
            'preemption_budget_window': 3600}

    def setUp(self):
        super().setUp()
        test_preemption.fill_with_preemptibles(self)

    def test_default_is_written_at_the_first_charge(self):
        self.assertEqual({}, self.budget_list())

        self.boot('medium', 'first')
        second = self.boot('medium', 'second', expected_state='ERROR')

        self.assert_refused_for_budget(second)
        self.assertEqual({self.project: {
            'project_id': self.project, 'source': 'default',
            'budget_vcpu_minutes': 180, 'spent_vcpu_minutes': 120,
            'remaining_vcpu_minutes': 60}}, self.budget_list())

    def test_a_charge_expires_after_the_window(self):
        now = timeutils.utcnow()
        self.boot('medium', 'first')
        self.wait_for_terminations()
        # Charged for at most the window: B-2 ran 65 minutes, 60 count.
        self.assertEqual(120, self.ledger_usage())
        reconciler = self.scheduler.manager.reconciler
        context = nova_context.get_admin_context()

        # Charged at now or a little later, so due at now + 3600 or a
        # little later.
        reconciler.run(context, now=now + datetime.timedelta(seconds=3590))
        self.assertEqual(120, self.ledger_usage())
        reconciler.run(context, now=now + datetime.timedelta(seconds=3660))

        self.assertEqual(0, self.ledger_usage())
        self.assertEqual({}, self.charges())
        # The window rolled on: the budget is whole again.
        self.boot('medium', 'second')

    def test_two_lease_holders_overlapping_delete_each_charge_once(self):
        now = timeutils.utcnow()
        self.boot('medium', 'first')
        client = self.scheduler.manager.placement_client
        context = nova_context.get_admin_context()
        holders = [ledger.Keeper(client), ledger.Keeper(client)]
        # Both read the charge before it is due.
        for holder in holders:
            self.assertEqual(0, holder.run(context, now, 180))
        later = now + datetime.timedelta(seconds=3660)

        deleted = [holder.run(context, later, 180) for holder in holders]

        self.assertEqual([1, 0], deleted)
        self.assertEqual({}, self.charges())

    def test_the_default_changed_applies_to_its_ledgers(self):
        self.boot('medium', 'first')
        reconciler = self.scheduler.manager.reconciler
        reconciler.settings = dataclasses.replace(reconciler.settings,
                                                  budget_minutes=600)

        reconciler.run(nova_context.get_admin_context())

        self.assertEqual(600, self.ledger_capacity())


class MultiCreate(Budgets):

    def setUp(self):
        super().setUp()
        test_preemption.fill_with_preemptibles(self)
        self.preemptibles = self.live_names()

    def boot_two(self, expected_state):
        body = self._build_server(name='two', flavor_id=self.normal[
            'medium'], networks='none')
        body.update(min_count=2, max_count=2)
        self.api.post_server({'server': body})
        servers = [s for s in self.api.get_servers()
                   if s['name'].startswith('two-')]
        self.assertEqual(2, len(servers))
        return [self._wait_for_state_change(s, expected_state)
                for s in servers]

    def test_first_instances_charges_count_for_the_second(self):
        # B-2 (132) for the first; the cheapest for the second, B-3 (80
        # minutes), would cost 162 more: 294 > 240.
        self.set_budget(4)

        servers = self.boot_two('ERROR')

        for server in servers:
            self.assert_refused_for_budget(server)
        self.wait_for_terminations()
        # The request failed: its victims came back, and their charges
        # with them.
        self.assertEqual(self.preemptibles, sorted(
            n for n in self.live_names() if not n.startswith('two')))
        self.assertEqual(0, self.ledger_usage())
        self.assertEqual({}, self.charges())

    def test_both_placed_within_the_budget(self):
        self.set_budget(5)   # 300 >= 132 + 162

        self.boot_two('ACTIVE')

        self.wait_for_terminations()
        self.assertIn(self.ledger_usage(), (294, 298))
        self.assert_within_budget()


class RaceForTheLastOfABudget(Budgets):
    """Two workers spend one project's budget on two hosts at once: the
    host tokens do not conflict, only the ledger does."""

    def setUp(self):
        super().setUp()
        # host-B: three normal servers and one preemptible (65 minutes,
        # partial period 5): the cheapest room for a medium server, no
        # room for a large one. host-A: four preemptibles (partial
        # periods 20 to 35): the room for a large server.
        for i in range(3):
            self.seed('medium', 'NB%d' % i, 'host-B')
        self.seed('medium', 'PB', 'host-B', preemptible=True, minutes=65)
        for i, minutes in enumerate((80, 85, 90, 95)):
            self.seed('medium', 'PA%d' % i, 'host-A', preemptible=True,
                      minutes=minutes)
        self.other = self.other_worker()

    def test_only_one_spends_the_last_of_the_budget(self):
        # 360: the large server's two victims (162 + 172) or the medium
        # one's (132), not both.
        self.set_budget(6)
        names = self.names()

        def competitor():
            with self.served_by(self.other):
                self.boot('large', 'competitor')
        # The first worker has read the budget (360 left) and chosen PB;
        # the other worker, having read the same, commits first on host-A.
        self.before_write(competitor)

        first = self.boot('medium', 'first', expected_state='ERROR')

        self.assert_refused_for_budget(first)
        self.assertEqual('host-A',
                         self.host_of(self.server('competitor')))
        self.wait_for_terminations()
        self.assertEqual(sorted([names['PA0'], names['PA1']]),
                         sorted(self.victim_uuids()))
        self.assertIn('PB', self.live_names())
        self.assertIn(self.ledger_usage(), (334, 338))
        self.assert_within_budget()
        self.assert_within_capacity()


class KeeperRacesAnOperator(Budgets):
    """The lease holder lists the ledgers that follow the default at the
    start of its pass; an operator's ``budget set`` landing before it
    brings one to the default is kept (found by review: a budget of 0 set
    to protect a project was replaced by the default)."""
    OPIE = {'preemption_budget_vcpu_hours': 3,
            'preemption_budget_window': 3600}

    def setUp(self):
        super().setUp()
        test_preemption.fill_with_preemptibles(self)

    def test_an_explicit_budget_set_during_a_pass_is_kept(self):
        client = self.scheduler.manager.placement_client
        context = nova_context.get_admin_context()
        # A ledger following the default, as a first charge writes it.
        ledger.write(client, context, self.project, 180, explicit=False,
                     replace=False)
        self.assertEqual(180, self.ledger_capacity())
        pending = [lambda: self.set_budget(0)]
        real = ledger.Keeper._follow

        def follow(keeper, *args, **kwargs):
            if pending:
                pending.pop()()
            return real(keeper, *args, **kwargs)
        self.stub_out('opie.nova.request.ledger.Keeper._follow', follow)

        ledger.Keeper(client).run(context, timeutils.utcnow(), 180)

        self.assertEqual([], pending)
        self.assertEqual(0, self.ledger_capacity())
