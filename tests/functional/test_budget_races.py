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

"""A ledger removed while a request charges it (issue 27's left-over).

``opie-manage budget unset`` deletes a project's ledger that holds no
charge; the lease holder deletes a default ledger once there is no
default. A request that read the ledger just before writes its charge to
a provider gone: Placement answers 400, and keeps the consumers it had
created for that write (with no allocations, at generation 0). The
request must read the budgets again and write again, adopting those
consumers, not fail.
"""
from nova import context as nova_context

from opie.nova.request import ledger
from tests.functional import test_budgets
from tests.functional import test_preemption


class LedgerRemovedCloud(test_budgets.Budgets):
    """The project's budget set, its servers filling both hosts."""

    def setUp(self):
        super().setUp()
        test_preemption.fill_with_preemptibles(self, booted=True)
        self.set_budget(100)

    def unset_before_the_write(self):
        client = self.scheduler.manager.placement_client
        self.before_write(lambda: self.assertEqual(0, ledger.unset(
            client, nova_context.get_admin_context(), self.project)))


class LedgerRemovedMeanwhile(LedgerRemovedCloud):

    def test_the_request_goes_on_without_the_budget(self):
        self.unset_before_the_write()

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual('ACTIVE', server['status'])
        self.assertNotIn('B-2', self.live_names())
        self.assertEqual({}, self.budget_list())
        self.assert_within_capacity()


class LedgerRemovedMeanwhileWithADefault(LedgerRemovedCloud):
    # vCPU-hours: the cheapest victim (132 vCPU-minutes) fits.
    OPIE = {'preemption_budget_vcpu_hours': 3}

    def test_the_request_charges_the_default_ledger_written_again(self):
        self.unset_before_the_write()

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual('ACTIVE', server['status'])
        self.assertNotIn('B-2', self.live_names())
        [charge] = self.charges().values()
        self.assertEqual(132, charge['resources'][ledger.RESOURCE_CLASS])
        self.assert_within_budget()
