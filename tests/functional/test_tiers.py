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

"""Tiers and minimum uptime through a real Nova (issues 26, 27).

The terms are extra specs of preemptible flavors; the scheduler reads them
from the copy of the flavor in each server. Which victims a host gives up
is the core's exact search (tests/unit/core); here, that the terms reach
it from Nova, that hosts are tried lowest tier first whatever the
weighers say, and that a tenant reads in the fault why a request found no
room. The plan's order of hosts itself (a host with room first, a higher
tier where no lower one frees enough) is decided without Nova's services:
tests/functional/plugin/test_tiers.py.
"""
import datetime

from nova import context as nova_context
from oslo_utils import timeutils

from opie.core import scheduling
from opie.nova.request import host_records
from opie.testing import cloud
from opie.testing import harness


class TermsCloud(cloud.OpieCloud):

    def setUp(self):
        super().setUp()
        self.stub_out('opie.nova.flavor_check._VERDICTS', {})
        self.stub_out('opie.nova.flavor_check._TERMS', {})
        self.flavors = {}

    def flavor(self, name, size='medium', **terms):
        """A preemptible flavor of ``size`` with these terms."""
        vcpus, memory_mb, disk_gb = harness.SIZES[size]
        specs = dict(cloud.preemptible_specs(vcpus, memory_mb, disk_gb),
                     **{'opie:' + key: str(value)
                        for key, value in terms.items()})
        self.flavors[name] = self._create_flavor(
            name=name, vcpu=vcpus, memory_mb=memory_mb, disk=disk_gb,
            ephemeral=0, extra_spec=specs)
        return self.flavors[name]

    def set_terms(self, name, **terms):
        self.admin_api.post_extra_spec(self.flavors[name], {
            'extra_specs': {'opie:' + key: str(value)
                            for key, value in terms.items()}})

    def boot_as(self, flavor, name, host=None, minutes=None,
                expected_state='ACTIVE'):
        """Boot a server of the preemptible ``flavor`` (a name of
        :meth:`flavor`) that launched ``minutes`` ago."""
        server = self._create_server(
            name=name, flavor_id=self.flavors[flavor], networks='none',
            host=host, expected_state=expected_state)
        if minutes is not None:
            self.set_launched_at(server['id'], minutes)
        return server

    def seed_as(self, flavor, name, host, minutes=None):
        """:meth:`boot_as`, seeded (:meth:`OpieCloud.seed`): for a fill."""
        return self.seed(None, name, host, preemptible=True,
                         minutes=minutes, flavor_id=self.flavors[flavor])

    def fill_with_normal(self, host):
        for i in range(2):
            self.seed('large', '%s-N%d' % (host[-1], i), host)

    def victim_names(self):
        names = {s['id']: s['name'] for s in self.admin_api.get_servers(
            detail=False, search_opts={'all_tenants': 1, 'deleted': 1})}
        return sorted(names[uuid] for uuid in self.victim_uuids())


class LowestTierFirst(TermsCloud):
    """A normal request takes from the lowest tier first, even where a
    higher tier's victims cost less (period cost: minutes lost of the
    running hour)."""

    def setUp(self):
        super().setUp()
        self.flavor('gold', tier=1)
        self.flavor('bronze', tier=0)

    def test_on_one_host(self):
        # host-A: cheap gold (1 and 2 minutes lost), dear bronze (58, 59).
        for i, minutes in enumerate((61, 62)):
            self.seed_as('gold', 'gold-%d' % i, 'host-A', minutes)
        for i, minutes in enumerate((118, 119)):
            self.seed_as('bronze', 'bronze-%d' % i, 'host-A', minutes)
        self.fill_with_normal('host-B')
        self.select_destinations.reset_mock()

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual('host-A', self.host_of(server))
        self.assertEqual(['bronze-0'], self.victim_names())
        self.assert_within_capacity()

    def test_across_hosts(self):
        # host-A all cheap gold; host-B all dear bronze: the preemption
        # cost weigher alone would send the request to host-A.
        for i in range(4):
            self.seed_as('gold', 'gold-%d' % i, 'host-A', 61 + i)
            self.seed_as('bronze', 'bronze-%d' % i, 'host-B', 110 + i)

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual('host-B', self.host_of(server))
        self.assertEqual(['bronze-0'], self.victim_names())
        self.assert_within_capacity()


class NoTierPreemptedForItsOwn(TermsCloud):
    """Preemptible requests never preempt, whatever their tier."""

    def test_a_tier_1_request_on_a_cloud_full_of_tier_0_fails(self):
        self.flavor('gold', tier=1)
        self.flavor('bronze', tier=0)
        for host in self.HOSTS:
            for i in range(4):
                self.seed_as('bronze', '%s-%d' % (host[-1], i), host, 61)
        before = self.live_names()

        server = self.boot_as('gold', 'gold', expected_state='ERROR')

        self.assertIn('No valid host', server['fault']['message'])
        self.assertEqual([], self.victim_names())
        self.assertEqual(sorted(before + ['gold']), self.live_names())
        self.assert_within_capacity()


class MinimumUptime(TermsCloud):
    """A preemptible younger than its minimum uptime is never a victim."""

    def setUp(self):
        super().setUp()
        self.flavor('kept', minimum_uptime=3600)

    def test_only_servers_old_enough_are_victims(self):
        # host-A: young ones, cheapest (5 minutes lost), and old dear
        # ones (58, 59).
        for i in range(2):
            self.seed_as('kept', 'young-%d' % i, 'host-A', 5)
            self.seed_as('kept', 'old-%d' % i, 'host-A', 118 + i)
        self.fill_with_normal('host-B')

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual('host-A', self.host_of(server))
        self.assertEqual(['old-0'], self.victim_names())

    def test_a_victim_launched_again_is_not_young_again(self):
        # The cache chose old-0, the cheapest; its row, read again before
        # the write, says it launched again (a rescue, a rebuild) a minute
        # ago: its owner could repeat that to stay young, so a minimum
        # uptime counts from its creation (found by review).
        old = [self.seed_as('kept', 'old-%d' % i, 'host-A', 118 + i)
               for i in range(2)]
        for i in range(2):
            self.seed('medium', 'A-N%d' % i, 'host-A')
        self.fill_with_normal('host-B')
        pending = [lambda: self.set_launched_at(old[0]['id'], 1,
                                                created=False)]
        real = host_records.InstanceLoader.not_victims

        def not_victims(loader, *args, **kwargs):
            if pending:
                pending.pop()()
            return real(loader, *args, **kwargs)
        self.stub_out(
            'opie.nova.request.host_records.InstanceLoader.not_victims',
            not_victims)

        self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual([], pending)
        self.assertEqual(['old-0'], self.victim_names())

    def test_a_request_only_young_servers_could_serve_fails_saying_so(self):
        for host in self.HOSTS:
            for i in range(4):
                self.seed_as('kept', '%s-%d' % (host[-1], i), host, 30)
        before = self.live_names()

        server = self.boot('medium', 'normal', expected_state='ERROR')

        fault = self.api.get_server(server['id'])['fault']['message']
        self.assertIn('OPIE: 2 hosts: %s.' % scheduling.TOO_YOUNG, fault)
        self.assertEqual([], self.victim_names())
        self.assertEqual(sorted(before + ['normal']), self.live_names())


class ReconcilerKeepsTheTerms(TermsCloud):
    """The reconciler's repair of an overcommit takes the lowest tier first
    and keeps minimum uptimes wherever servers old enough cover the
    overcommit; an overcommit must go, so only where none do does it take
    young ones, and says so in the log."""

    def setUp(self):
        super().setUp()
        self.flavor('kept', minimum_uptime=3600)

    def overcommit(self, host, servers):
        """A normal server placed by a write without the host token (as
        Nova's own report client writes), while ``servers`` were old
        enough to make room: ``host`` is over capacity."""
        self.stub_out('opie.nova.request.plan.Plan.record_of',
                      lambda plan, allocations: None)
        self.boot('medium', 'normal', host=host)
        for server, minutes in servers.items():
            # Rebuilt since, say: launched again.
            self.set_launched_at(server, minutes)

    def repair(self, minutes_later):
        later = timeutils.utcnow() + datetime.timedelta(
            minutes=minutes_later)
        return self.scheduler.manager.reconciler.run(
            nova_context.get_admin_context(), now=later)

    def test_a_young_server_goes_only_where_no_old_one_covers(self):
        young = [self.seed_as('kept', 'young-%d' % i, 'host-A', 90)['id']
                 for i in range(2)]
        for i in range(2):
            self.seed_as('kept', 'old-%d' % i, 'host-A', 115 + i)
        self.overcommit('host-A', {uuid: 1 for uuid in young})
        self.repair(0)

        # Past the grace period: the young ones (11 minutes lost) are
        # cheaper than the old ones (55 and 56).
        [preemption] = self.repair(10)
        self.wait_for_terminations()

        self.assertEqual(['old-0'], self.victim_names())
        self.assertNotIn('younger than their minimum uptime',
                         self.stdlog.logger.output)
        self.assert_within_capacity()

    def test_only_young_servers_left_go_and_the_log_says_so(self):
        servers = [self.seed_as('kept', 'A-%d' % i, 'host-A', 90)['id']
                   for i in range(4)]
        self.overcommit('host-A', {uuid: 30 + i
                                   for i, uuid in enumerate(servers)})
        self.repair(0)

        [preemption] = self.repair(10)
        self.wait_for_terminations()

        self.assertEqual(['A-0'], self.victim_names())
        self.assertIn('only preemptibles younger than their minimum uptime '
                      'cover it', self.stdlog.logger.output)

    def test_the_lowest_tier_goes_first(self):
        self.flavor('gold', tier=1)
        self.flavor('bronze', tier=0)
        for i in range(2):
            self.seed_as('gold', 'gold-%d' % i, 'host-A', 61 + i)
            self.seed_as('bronze', 'bronze-%d' % i, 'host-A', 118 + i)
        self.overcommit('host-A', {})
        self.repair(0)

        [preemption] = self.repair(10)
        self.wait_for_terminations()

        self.assertEqual(['bronze-0'], self.victim_names())


class DefaultMinimumUptime(TermsCloud):
    """``[opie] minimum_uptime`` for the flavors that set none."""
    OPIE = {'minimum_uptime': 3600}

    def test_the_default_protects_and_a_flavors_own_value_wins(self):
        self.flavor('plain')
        self.flavor('open', minimum_uptime=0)
        # host-A: young servers of each flavor, those of 'plain' cheaper.
        for i in range(2):
            self.seed_as('plain', 'plain-%d' % i, 'host-A', 1 + i)
            self.seed_as('open', 'open-%d' % i, 'host-A', 30 + i)
        self.fill_with_normal('host-B')

        self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual(['open-0'], self.victim_names())


class TermsOfTheBoot(TermsCloud):
    """Nova copies the flavor into each server at boot: the terms a server
    was booted with hold until it is resized."""

    def test_servers_keep_their_terms_and_new_ones_get_the_new(self):
        self.flavor('changing', tier=1)
        self.boot_as('changing', 'booted-as-1', 'host-A', 61)
        self.set_terms('changing', tier=0)
        self.boot_as('changing', 'booted-as-0', 'host-A', 119)
        self.seed('medium', 'A-N0', 'host-A')
        self.seed('medium', 'A-N1', 'host-A')
        self.fill_with_normal('host-B')

        self.boot('medium', 'normal')
        self.wait_for_terminations()

        # The dearer, but of tier 0.
        self.assertEqual(['booted-as-0'], self.victim_names())

    def test_a_resized_server_takes_its_new_flavors_terms(self):
        self.flags(allow_resize_to_same_host=True)
        self.flavor('gold', tier=1)
        self.flavor('bronze', tier=0)
        self.fill_with_normal('host-B')
        resized = self.boot_as('gold', 'resized', 'host-A')
        self._resize_server(resized, self.flavors['bronze'])
        self._confirm_resize(resized)
        self.set_launched_at(resized['id'], 119)
        for i in range(2):
            self.seed_as('gold', 'gold-%d' % i, 'host-A', 61 + i)
        self.seed('medium', 'A-N0', 'host-A')

        self.boot('medium', 'normal')
        self.wait_for_terminations()

        # The dearest, but now of tier 0.
        self.assertEqual(['resized'], self.victim_names())


class BadTerms(TermsCloud):

    def test_a_bad_tier_is_tier_0_and_named_in_the_log(self):
        self.flavor('odd', tier='gold')
        self.flavor('gold', tier=1)
        # 'odd' dear, 'gold' cheap: as tier 0, 'odd' goes first.
        for i in range(2):
            self.seed_as('odd', 'odd-%d' % i, 'host-A', 118 + i)
            self.seed_as('gold', 'gold-%d' % i, 'host-A', 61 + i)
        self.fill_with_normal('host-B')

        self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual(['odd-0'], self.victim_names())
        self.assertEqual(1, self.stdlog.logger.output.count(
            "flavor odd: opie:tier='gold' is not a whole number"))
