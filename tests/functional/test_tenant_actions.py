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

"""A preemptible server is preemptible whatever its owner does to it.

The owner (a project member, not an admin) locks, rescues, stops,
suspends, pauses or resizes its preemptible servers and never confirms:
a normal boot still gets its room. Only an operator's lock protects one
(which victims each lock leaves: plugin/test_locks.py).
"""
from opie.testing import cloud
from tests.functional import test_preemption


class OwnerActions(cloud.OpieCloud):

    def setUp(self):
        super().setUp()
        self.member = self.api_fixture.api

    def act(self, name, action):
        server = self.server(name)
        self.member.post_server_action(server['id'], action)
        return server

    def test_owner_cannot_make_preemptibles_immune(self):
        test_preemption.fill_with_preemptibles(self)
        preemptibles = self.live_names()
        for name, action, state in (
                ('B-2', {'rescue': {}}, 'RESCUE'),
                ('B-3', {'os-stop': None}, 'SHUTOFF'),
                ('A-0', {'suspend': None}, 'SUSPENDED'),
                ('A-1', {'pause': None}, 'PAUSED')):
            self._wait_for_state_change(self.act(name, action), state)
        for name in preemptibles:
            self.act(name, {'lock': None})
        b2 = self.server('B-2')['id']

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        # B-2 (rescued and locked by its owner) was still the cheapest.
        self.assertEqual('host-B', server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(sorted(set(preemptibles) - {'B-2'} | {'normal'}),
                         self.live_names())
        self.assertEqual([b2], self.victim_uuids())
        self.assertEqual(1, self.preempt_actions(b2))
        self.assert_within_capacity()

    def test_resize_never_confirmed_does_not_protect(self):
        # R resized from host-A to host-B and left unconfirmed: its new
        # flavor holds host-B, its old one host-A (the migration's).
        resized = self.boot('small', 'R', host='host-A', preemptible=True)
        self.member.post_server_action(resized['id'], {'resize': {
            'flavorRef': self.preemptible['medium']}})
        self._wait_for_state_change(resized, 'VERIFY_RESIZE')
        self.assertEqual('host-B', self.host_of(resized))
        for host in self.HOSTS:
            self.boot('large', 'L' + host[-1], host=host)
            self.boot('medium', 'M' + host[-1], host=host)

        server = self.boot('medium', 'normal')
        self.wait_for_terminations()

        self.assertEqual('host-B', server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual([resized['id']], self.victim_uuids())
        self.assertEqual(1, self.preempt_actions(resized['id']))
        self.assert_within_capacity()


class OwnerRevertsAVictim(cloud.OpieCloud):
    """A normal server resized to a preemptible flavor and left in
    VERIFY_RESIZE is a victim on its new host; its owner reverts the
    resize before the scheduler terminates it: it is normal again, and
    must live."""

    def setUp(self):
        super().setUp()
        self.member = self.api_fixture.api
        # N: a normal small on host-A, resized to a preemptible medium:
        # host-B (no resize to the same host).
        self.resized = self.boot('small', 'N', host='host-A')
        self.member.post_server_action(self.resized['id'], {'resize': {
            'flavorRef': self.preemptible['medium']}})
        self._wait_for_state_change(self.resized, 'VERIFY_RESIZE')
        self.assertEqual('host-B', self.host_of(self.resized))
        # Both hosts full: N's room on host-B is the only room there is.
        self.boot('large', 'LA', host='host-A')
        self.boot('medium', 'MA', host='host-A')
        self.boot('small', 'SA', host='host-A')
        self.boot('large', 'LB', host='host-B')
        self.boot('medium', 'MB', host='host-B')
        self.deferred = self.defer_terminations()

    def revert(self):
        self.member.post_server_action(self.resized['id'],
                                       {'revertResize': None})
        self._wait_for_state_change(self.resized, 'ACTIVE')
        self._wait_for_migration_status(self.resized, ['reverted'])

    def terminate_deferred(self):
        terminator = self.scheduler.manager.terminator
        return [p for preemptions, info in self.deferred
                for p in terminator.terminate(preemptions, info)]

    def assert_spared(self, happened):
        self.assertEqual([], happened)
        server = self.api.get_server(self.resized['id'])
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual('host-A', server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(0, self.preempt_actions(self.resized['id']))
        self.assertEqual([], self.victim_uuids())
        self.assert_within_capacity()

    def test_reverted_before_the_termination_runs(self):
        self.boot('medium', 'normal')
        [(preemptions, _)] = self.deferred
        self.assertEqual([self.resized['id']],
                         [v.uuid for v in preemptions[0].victims])

        self.revert()

        self.assert_spared(self.terminate_deferred())

    def test_reverted_between_the_terminators_read_and_its_act(self):
        self.boot('medium', 'normal')
        reverting = self.before_the_act(self.revert)

        happened = self.terminate_deferred()

        self.assertEqual([], reverting)
        self.assert_spared(happened)
