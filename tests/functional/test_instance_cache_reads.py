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

"""The instance cache does not read a node in full on every
request where Placement legitimately counts more preemptible usage than
the instances listed there (found by an adversarial review): a
preemptible's resize left unconfirmed (its migration holds the source),
a flavor marked preemptible that OPIE counts as normal."""
from opie.nova import hoststate
from opie.testing import cloud


def full_reads_of_host_a(test):
    """Three normal boots, each preempting: for each, the full reads of
    host-A it made. The first may read host-A in full; later ones catch
    up from the cache."""
    reads = []
    real = hoststate.InstanceLoader._read

    def spy(loader, cell_uuid, hosts=None, since=None):
        reads.append(tuple(hosts or ()))
        return real(loader, cell_uuid, hosts=hosts, since=since)
    test.stub_out('opie.nova.hoststate.InstanceLoader._read', spy)
    per_request = []
    for i in range(3):
        del reads[:]
        test.boot('medium', 'N%d' % i)
        test.wait_for_terminations()
        per_request.append([h for h in reads if 'host-A' in h])
    return per_request


class UnconfirmedResize(cloud.OpieCloud):
    HOSTS = ('host-A', 'host-B')

    def test_unconfirmed_resize_source_read_in_full_on_every_request(self):
        member = self.api_fixture.api
        # R: a preemptible small on host-A, resized by its owner to a
        # preemptible medium (host-B) and never confirmed.
        resized = self.boot('small', 'R', host='host-A', preemptible=True)
        member.post_server_action(resized['id'], {'resize': {
            'flavorRef': self.preemptible['medium']}})
        self._wait_for_state_change(resized, 'VERIFY_RESIZE')
        self.assertEqual('host-B', self.host_of(resized))
        # Launched 59 minutes ago: the dearest victim, never chosen.
        self.set_launched_at(resized['id'], 59)
        for i in range(3):
            self.boot('medium', 'PA%d' % i, host='host-A', preemptible=True,
                      minutes=10 + i)
            self.boot('medium', 'PB%d' % i, host='host-B', preemptible=True,
                      minutes=40 + i)
        per_request = full_reads_of_host_a(self)
        self.assertIn('R', self.live_names())
        self.assertEqual([], per_request[1] + per_request[2], per_request)


class OddPreemptibleFlavor(cloud.OpieCloud):
    HOSTS = ('host-A', 'host-B')

    def test_marked_flavor_with_odd_override_read_in_full_every_request(self):
        # An operator's flavor marked preemptible whose disk override is
        # wrong: OPIE treats it as normal (one warning), yet Placement
        # charges its servers to the CUSTOM_PREEMPTIBLE_* classes.
        specs = cloud.preemptible_specs(2, 4000, 40)
        specs['resources:CUSTOM_PREEMPTIBLE_DISK_GB'] = '1'
        odd = self._create_flavor(name='odd', vcpu=2, memory_mb=4000,
                                  disk=40, ephemeral=0, extra_spec=specs)
        self._create_server(name='odd', flavor_id=odd, networks='none',
                            host='host-A')
        for i in range(3):
            self.boot('medium', 'PA%d' % i, host='host-A', preemptible=True,
                      minutes=10 + i)
            self.boot('medium', 'PB%d' % i, host='host-B', preemptible=True,
                      minutes=40 + i)
        self.boot('medium', 'PB3', host='host-B', preemptible=True,
                  minutes=50)
        per_request = full_reads_of_host_a(self)
        self.assertEqual([], per_request[1] + per_request[2], per_request)
