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

"""20 normal boots at once on a full cloud, two scheduler workers
(issue point 2).

The lab runs ``opie-scheduler`` with ``[scheduler] workers = 2``: two
processes take requests from the same RabbitMQ queue and race for the
same victims. Each normal small server needs exactly one small
preemptible victim, so if no victim is shared every ACTIVE normal server
has cost one preemptible server; and no host ends over capacity, by
Placement's usages or by the servers Nova has on it.
"""
import collections
import concurrent.futures

from opie.testing import lab

BOOTS = 20
SMALL_PER_HOST = 4


def _boot_normal(index):
    # A client each: the boots really are concurrent requests.
    return lab.boot(lab.nova('lab-beta'), 'rush-%d' % index, 'small')[0]


def test_concurrent_normal_boots_share_no_victim():
    room = SMALL_PER_HOST * lab.LAB.computes
    alpha = lab.nova('lab-alpha')
    fillers = set(lab.boot(alpha, 'filler', 'small-preemptible',
                           count=room))
    assert {s.status for s in lab.settled(fillers).values()} == {'ACTIVE'}

    with concurrent.futures.ThreadPoolExecutor(BOOTS) as pool:
        normals = set(pool.map(_boot_normal, range(BOOTS)))
    states = collections.Counter(
        s.status for s in lab.settled(normals).values())
    active = states['ACTIVE']
    assert active == min(BOOTS, room), states
    assert states['ERROR'] == BOOTS - active, states

    def victims_gone():
        alive = {s.id for s in alpha.servers.list()} & fillers
        return [alive] if len(alive) + active == room else None
    survivors, = lab.wait_for('the victims to be deleted', victims_gone)
    victims = fillers - survivors
    assert len(victims) == active
    history = lab.nova('lab-alpha', '2.21').instance_action
    for victim in victims:
        preempted = [a for a in history.list(victim)
                     if a.action == 'opie-preempt']
        assert len(preempted) == 1, victim

    for host, classes in lab.usages_and_capacity().items():
        for resource in ('VCPU', 'MEMORY_MB', 'DISK_GB'):
            used = (classes[resource][0]
                    + classes['CUSTOM_PREEMPTIBLE_' + resource][0])
            assert used <= classes[resource][1], (host, resource)
    per_host = collections.Counter(
        getattr(s, 'OS-EXT-SRV-ATTR:host')
        for s in lab.settled(normals | survivors).values()
        if s.status == 'ACTIVE')
    assert max(per_host.values()) <= SMALL_PER_HOST, per_host
