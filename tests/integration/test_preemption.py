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

"""A normal boot on a cloud full of preemptible servers (issue point 1).

Tenant alpha fills every compute with small preemptible servers; tenant
beta boots a normal one. It goes ACTIVE, the youngest preemptible server
(the cheapest under the default period cost: the least of its billing
period is lost) is deleted to make room on its host, and alpha can read
why in its server's actions.
"""
from opie.testing import lab


def test_normal_boot_preempts_the_cheapest_preemptible():
    alpha = lab.nova('lab-alpha')
    older, youngest = lab.fill_with_preemptibles(alpha)
    victim_host = getattr(lab.settled({youngest})[youngest],
                          'OS-EXT-SRV-ATTR:host')

    beta = lab.nova('lab-beta')
    normal, = lab.boot(beta, 'normal', 'small')
    server = lab.settled({normal})[normal]
    assert server.status == 'ACTIVE'
    assert getattr(server, 'OS-EXT-SRV-ATTR:host') == victim_host

    lab.wait_for('the victim to be deleted', lambda: youngest not in {
        s.id for s in alpha.servers.list()})
    assert {s.id for s in alpha.servers.list()} == set(older)
    # At 2.21 the owner lists the actions of a deleted server.
    actions = lab.nova('lab-alpha', '2.21').instance_action.list(youngest)
    preempt = [a for a in actions if a.action == 'opie-preempt']
    assert len(preempt) == 1, [a.action for a in actions]
