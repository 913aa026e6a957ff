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

"""Two scheduler workers deciding on one host at once.

A second ``OpieSchedulerManager`` (its own token generations, as another
worker process) serves a competing request, run deterministically at the
worst moment: after the first worker decided and before it writes, or
inside Placement while it handles the first worker's write, or while it
answers the first worker's read of the host. Whatever the
interleaving: no host over capacity, every victim taken once with one
``opie-preempt`` action, and a request fails only when no host can make
room.
"""
import fixtures

from opie.nova.request import cas
from opie.nova.request import claim
from opie.testing import cloud
from tests.functional import test_preemption


class Race(cloud.OpieCloud):

    def setUp(self):
        super().setUp()
        self.other = self.other_worker()

    def competitor(self, size, name):
        """A normal boot served by the other worker."""
        def boot():
            with self.served_by(self.other):
                self.boot(size, name)
        return boot

    def assert_each_victim_once(self):
        self.wait_for_terminations()
        victims = self.victim_uuids()
        self.assertEqual(len(victims), len(set(victims)))
        for uuid in victims:
            self.assertEqual(1, self.preempt_actions(uuid))
        self.assert_within_capacity()

    def test_normal_placed_beside_normal_does_not_overcommit(self):
        # host-B full of normal servers: host-A is the only candidate, with
        # room for one medium server beside three medium preemptibles.
        for i in range(2):
            self.boot('large', 'NB%d' % i, host='host-B')
        for i, minutes in enumerate((70, 80, 90)):
            self.boot('medium', 'P%d' % i, host='host-A', preemptible=True,
                      minutes=minutes)
        self.remember_names()
        # Both requests read host-A with 2 vCPUs free; the other worker
        # writes first.
        self.before_write(self.competitor('medium', 'second'))

        first = self.boot('medium', 'first')

        # The first write was refused; host-A, read again, was full, so
        # the first server took the cheapest preemptible (P0, 10 minutes).
        self.assertEqual('host-A', first['OS-EXT-SRV-ATTR:host'])
        self.assertEqual('host-A', self.host_of(self.server('second')))
        self.assert_each_victim_once()
        self.assertEqual([self._names['P0']], self.victim_uuids())
        self.assertEqual(['NB0', 'NB1', 'P1', 'P2', 'first', 'second'],
                         self.live_names())

    def remember_names(self):
        self._names = {s['name']: s['id'] for s in self.api.get_servers()}
        self.preemptibles = sorted(self._names)

    def fill(self):
        test_preemption.fill_with_preemptibles(self, booted=True)
        self.remember_names()

    def test_victim_taken_inside_placement_write_goes_once(self):
        self.fill()
        b2 = self._names['B-2']
        # Inside Placement, after the first write's consumer generations
        # were checked and before it reads B-2's allocations, the other
        # worker takes B-2 (read, decide, write, all committed).
        self.inside_write(self.competitor('medium', 'competitor'), [b2])

        first = self.boot('medium', 'first')

        # Placement refused the first write (the host token had moved);
        # host-B read again, the next cheapest went: B-3.
        self.assertEqual('host-B', first['OS-EXT-SRV-ATTR:host'])
        self.assertEqual('host-B', self.host_of(self.server('competitor')))
        self.assert_each_victim_once()
        self.assertEqual(sorted([b2, self._names['B-3']]),
                         sorted(self.victim_uuids()))
        self.assertEqual(sorted(set(self.preemptibles) - {'B-2', 'B-3'}
                                | {'competitor', 'first'}),
                         self.live_names())

    def test_competing_request_takes_the_victim_first(self):
        self.fill()
        self.before_write(self.competitor('medium', 'competitor'))

        first = self.boot('medium', 'first')

        self.assertEqual('host-B', first['OS-EXT-SRV-ATTR:host'])
        self.assert_each_victim_once()
        self.assertEqual(sorted([self._names['B-2'], self._names['B-3']]),
                         sorted(self.victim_uuids()))

    def host_read_raced(self, after):
        """The first request, on a worker that knows no host's token,
        reads host-B; the other worker takes B-2 inside Placement while it
        answers that read. The victims of both; Placement's requests."""
        self.fill()
        for host in ('host-A', 'host-B'):
            self.scheduler.manager.tokens.forget(
                self._get_provider_uuid_by_host(host))
        self.inside_host_read(self.competitor('medium', 'competitor'),
                              after=after)
        # A host read as its token and then its usage: two reads, the
        # usage newer than the generation.
        tokens = {cas.consumer(self._get_provider_uuid_by_host(host))
                  for host in ('host-A', 'host-B')}
        apart = []
        read_consumer = claim.read_consumer

        def spied(client, context, uuid):
            if uuid in tokens:
                apart.append(uuid)
            return read_consumer(client, context, uuid)
        self.stub_out('opie.nova.request.claim.read_consumer', spied)
        self.useFixture(fixtures.MockPatch(
            'opie.nova.request.host_records.read_usages',
            side_effect=lambda *args: apart.append('usages')))
        calls = []
        self.count_placement_calls(calls)

        first = self.boot('medium', 'first')

        self.assertEqual('host-B', first['OS-EXT-SRV-ATTR:host'])
        self.assertEqual('host-B', self.host_of(self.server('competitor')))
        self.assert_each_victim_once()
        self.assertEqual(sorted([self._names['B-2'], self._names['B-3']]),
                         sorted(self.victim_uuids()))
        self.assertEqual([], apart)
        return calls

    def test_victim_taken_before_the_host_read_is_seen_taken(self):
        # The read answers with B-2 gone and the token moved, in one
        # query: the first worker takes B-3 with its first write.
        calls = self.host_read_raced(after=False)

        self.assertEqual(2, calls.count('POST /allocations'))

    def test_victim_taken_after_the_host_read_is_refused(self):
        # The read answers with B-2 there, at the token's old generation:
        # the first worker's write of B-2 is refused, host-B is read again
        # and B-3 goes.
        calls = self.host_read_raced(after=True)

        self.assertEqual(3, calls.count('POST /allocations'))

    def test_lost_victims_send_the_request_to_the_next_host(self):
        # host-B: a large normal server and two young preemptibles (the
        # cheapest room for a large server); host-A: four older ones.
        self.boot('large', 'NB', host='host-B')
        for i, minutes in enumerate((70, 75)):
            self.boot('medium', 'PB%d' % i, host='host-B', preemptible=True,
                      minutes=minutes)
        for i, minutes in enumerate((91, 152, 213, 274)):
            self.boot('medium', 'PA%d' % i, host='host-A', preemptible=True,
                      minutes=minutes)
        self.remember_names()
        # The other worker takes both of host-B's preemptibles first: host-B
        # is then all normal servers.
        self.before_write(self.competitor('large', 'competitor'))

        first = self.boot('large', 'first')

        self.assertEqual('host-A', first['OS-EXT-SRV-ATTR:host'])
        self.assertEqual('host-B', self.host_of(self.server('competitor')))
        self.assert_each_victim_once()
        self.assertEqual(sorted(self._names[n] for n in
                                ('PB0', 'PB1', 'PA0', 'PA1')),
                         sorted(self.victim_uuids()))
