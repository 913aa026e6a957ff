"""Boot storms on a cloud full of preemptibles, two controllers.

The lab runs two ``opie-scheduler`` services with different host names,
as on two controllers, each with ``[scheduler] workers = 2``: four
processes take requests from one queue. Each round fills the cloud with
alpha's preemptible servers of mixed sizes, alpha locks half of them (an
owner's lock protects nothing), then beta's normal servers of mixed sizes
and alpha's preemptible servers are booted all at once. The normal servers
fit in any order once preemptibles go (sizes of 1 and 2 vCPUs, at most
capacity minus one vCPU per host), so every one must end ACTIVE; no host
may end over capacity, by Placement's usages or by Nova's servers; and
every preemptible server that went has exactly one ``opie-preempt``
action, every normal one none.
"""
import collections
import concurrent.futures

from opie.lab import bootstrap
from opie.lab import settings
from tests.integration import lab

ROUNDS = 2
FLAVORS = {name: (vcpus, ram, disk)
           for name, vcpus, ram, disk in bootstrap.FLAVORS}


def _fill():
    """Alpha's preemptibles, mediums first, until every vCPU is taken;
    their ids."""
    alpha = lab.nova('lab-alpha')
    vcpus = settings.COMPUTE_SIZE[0] * lab.LAB.computes
    mediums = lab.LAB.computes
    ids = []
    for flavor, count in (('medium-preemptible', mediums),
                          ('small-preemptible', vcpus - 2 * mediums)):
        for i in range(count):
            ids += lab.boot(alpha, 'fill-%s-%d' % (flavor, i), flavor)
            lab.settled(ids[-1:])
    states = collections.Counter(s.status
                                 for s in lab.settled(ids).values())
    assert states == {'ACTIVE': len(ids)}, states
    for server_id in ids[::2]:
        alpha.servers.lock(server_id)
    return ids


def _storm_requests():
    """(cloud, name, flavor) of the concurrent boots: normal servers
    summing to capacity minus one vCPU per host, and two preemptibles."""
    room = (settings.COMPUTE_SIZE[0] - 1) * lab.LAB.computes
    mediums = room // 3
    normals = ['medium'] * mediums + ['small'] * (room - 2 * mediums)
    return ([('lab-beta', 'normal-%d' % i, flavor)
             for i, flavor in enumerate(normals)]
            + [('lab-alpha', 'late-%d' % i, 'small-preemptible')
               for i in range(2)])


def _boot(request):
    cloud, name, flavor = request
    # A client each: the boots really are concurrent requests.
    return lab.boot(lab.nova(cloud), name, flavor)[0]


def _actions(server_id):
    history = lab.nova('lab-admin', '2.21').instance_action
    return [a.action for a in history.list(server_id)]


def _round():
    fill = _fill()
    requests = _storm_requests()
    with concurrent.futures.ThreadPoolExecutor(len(requests)) as pool:
        booted = list(pool.map(_boot, requests))
    normals = {i for i, (cloud, _, _) in zip(booted, requests)
               if cloud == 'lab-beta'}
    servers = lab.settled(set(booted) | set(fill))
    assert {servers[i].status for i in normals} == {'ACTIVE'}, {
        i: servers[i].status for i in normals}

    preempted = [i for i in fill + sorted(set(booted) - normals)
                 if 'opie-preempt' in _actions(i)]
    assert preempted, 'nothing was preempted'
    for server_id in preempted:
        assert _actions(server_id).count('opie-preempt') == 1, server_id
    for server_id in normals:
        assert 'opie-preempt' not in _actions(server_id), server_id

    def victims_gone():
        alive = lab.settled(set(preempted))
        return [alive] if not alive else None
    lab.wait_for('the victims to be deleted', victims_gone)
    # Every preemptible server still there is one nothing preempted.
    alive = lab.settled(set(booted) | set(fill))
    assert set(fill) - set(alive) == set(fill) & set(preempted)
    _assert_within_capacity(alive.values())


def _assert_within_capacity(servers):
    for host, classes in lab.usages_and_capacity().items():
        for resource in ('VCPU', 'MEMORY_MB', 'DISK_GB'):
            used = (classes[resource][0]
                    + classes['CUSTOM_PREEMPTIBLE_' + resource][0])
            assert used <= classes[resource][1], (host, resource, classes)
    per_host = collections.defaultdict(lambda: [0, 0, 0])
    for server in servers:
        if server.status != 'ACTIVE':
            continue
        size = FLAVORS[server.flavor['original_name'].replace(
            '-preemptible', '')]
        used = per_host[getattr(server, 'OS-EXT-SRV-ATTR:host')]
        for dim, amount in enumerate(size):
            used[dim] += amount
    for host, used in per_host.items():
        assert all(u <= c for u, c in zip(used, settings.COMPUTE_SIZE)), (
            host, used)


def test_storms_on_a_full_cloud_keep_every_guarantee():
    for _ in range(ROUNDS):
        _round()
        lab.delete_all()
