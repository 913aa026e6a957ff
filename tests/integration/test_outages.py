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

"""Outages in the middle of a storm that preempts (issue 24).

Each test fills the cloud with alpha's preemptibles and boots the storm of
:func:`lab.storm_requests` (beta's normal servers that fit once
preemptibles go, two of alpha's preemptibles) all at once; while the
first half is in flight a fault strikes, the second half comes during
the fault, and then the fault heals:

- RabbitMQ stopped (the broker process ends) for 60 s;
- MariaDB stopped for 15 s (every service's database, Placement's too);
- a scheduler worker SIGKILLed once it has answered a request that
  preempted, before it terminates a victim (:mod:`opie.lab.scheduler`);
- the compute holding the most would-be victims stopped for 30 s, and
  started again.

Once the fault has healed, every normal server must be ACTIVE, or where
stock Nova would fail it too (a request the outage broke) in ERROR with a
fault, or refused at the API; no host may be over capacity; every
preempted server has exactly one ``opie-preempt`` action, and only room
a request took (on a host where normal servers hold at least what was
preempted there, less one vCPU per preemption: a victim set frees at most
one vCPU more than needed with the lab's sizes); and once the
reconciler's grace has passed, Placement holds no allocation of a
consumer that is neither a server nor a migration (nor OPIE's own host
token). Each test prints its recovery time: from the fault healed to the
next request placed (a probe boot, tried again until one is placed).
"""
import collections
import concurrent.futures
import time

from keystoneauth1 import exceptions as ksa_exc
from novaclient import exceptions as nova_exc
import pytest

from opie.lab import faults
from opie.lab import process
from opie.lab import servers as lab_servers
from opie.nova.periodic import leader
from opie.testing import lab

pytestmark = pytest.mark.usefixtures('faulty_schedulers')

RABBITMQ_DOWN_S = 60
MARIADB_DOWN_S = 15
COMPUTE_DOWN_S = 30
PROBE_WAIT_S = 60
# OPIE's per-host token: one unit of this class, never a server's.
TOKEN_CLASS = 'CUSTOM_OPIE_HOST'


def _host(server):
    return getattr(server, 'OS-EXT-SRV-ATTR:host')


def _try_boot(request):
    """Boot one request; its id, or None when the API refused it (as it
    would refuse it on stock Nova during the outage)."""
    try:
        return lab.boot_request(request)
    except (nova_exc.ClientException, ksa_exc.ClientException):
        return None


def _all_servers():
    """{id: server} of every server, deleted ones left out."""
    return {s.id: s for s in lab.nova('lab-admin').servers.list(
        search_opts={'all_tenants': 1})}


def _probe_until_placed():
    """Boot a small normal server as beta until one is placed; its id. A
    probe not built within PROBE_WAIT_S (its request lost in the outage)
    is deleted and another booted."""
    beta = lab.nova('lab-beta')
    while True:
        try:
            probe, = lab.boot(beta, 'probe', 'small')
        except (nova_exc.ClientException, ksa_exc.ClientException):
            # Not serving yet: ask again.
            time.sleep(1)
            continue
        try:
            if lab.settled({probe}, PROBE_WAIT_S)[probe].status == 'ACTIVE':
                return probe
        except AssertionError:
            pass
        beta.servers.delete(probe)


def _storm(fault):
    """The storm with ``fault(during)``, a function that strikes, calls
    ``during()`` (which boots the storm's second half), waits and heals:
    {fill id: (host, vCPUs)} as filled."""
    fill = {i: (_host(s), lab.size(s)[0])
            for i, s in lab.settled(set(lab.fill_cloud())).items()}
    requests = lab.storm_requests()
    half = len(requests) // 2
    with concurrent.futures.ThreadPoolExecutor(len(requests)) as pool:
        boots = [pool.submit(_try_boot, r) for r in requests[:half]]
        # The fault strikes once the API has taken the first half: they
        # are being scheduled, preempting and built.
        concurrent.futures.wait(boots)
        fault(lambda: boots.extend(pool.submit(_try_boot, r)
                                   for r in requests[half:]))
        healed = time.monotonic()
        pool.submit(_probe_until_placed).result()
        recovery = time.monotonic() - healed
        refused = [boot.result() for boot in boots].count(None)
    print('recovery: %.1f s from the fault healed to a request placed; '
          '%d of %d requests refused by the API' % (
              recovery, refused, len(requests)))
    return fill


def _failed_as_on_stock_nova(server, restarted):
    """In ERROR with a fault; or, without one, a build the ``restarted``
    compute was sent while it was down: Nova's init_host errs out a
    server whose build was interrupted before its claim, which holds
    its allocations there but has no host yet; or lost by the conductor
    (:func:`_lost_by_the_conductor`)."""
    if server.status == 'BUILD':
        return _lost_by_the_conductor(server)
    if server.status != 'ERROR':
        return False
    if getattr(server, 'fault', None):
        return True
    return (restarted is not None and _host(server) is None
            and _providers_of(server.id) == {restarted})


def _lost_by_the_conductor(server):
    """Building for ever, in no cell (no instance action: the conductor
    records one when it creates the server in its cell), on no host and
    holding nothing in Placement, while the conductor logged failures to
    schedule: its scheduling failed while the database was down, so the
    conductor could not record the failure either. Stock Nova leaves
    such a server so."""
    if (server.status != 'BUILD' or _host(server)
            or _providers_of(server.id)
            or lab.nova('lab-admin', '2.21').instance_action.list(
                server.id)):
        return False
    log = (lab.LAB.logs / 'nova-conductor.log').read_text(errors='replace')
    return 'Failed to schedule instances' in log


def _settled():
    """{id: server} of every server, once none is building but those
    :func:`_lost_by_the_conductor`."""
    def building():
        return {i: (s.name, getattr(s, 'OS-EXT-STS:task_state'))
                for i, s in _all_servers().items()
                if s.status == 'BUILD' and not _lost_by_the_conductor(s)}

    servers, = lab.wait_or_show(
        'servers to build',
        lambda: None if building() else [_all_servers()], building)
    return servers


def _providers_of(consumer):
    """Names of the providers where ``consumer`` has allocations."""
    names = {p['uuid']: p['name'] for p in lab.placement().get(
        '/resource_providers').json()['resource_providers']}
    return {names.get(uuid) for uuid in lab.placement().get(
        '/allocations/%s' % consumer).json()['allocations']}


def _assert_guarantees(fill, restarted=None):
    """The guarantees of the module's docstring, once the cloud has
    settled; ``restarted``: the compute a test stopped and started."""
    servers = _settled()
    normals = {i: s for i, s in servers.items()
               if not s.flavor['original_name'].endswith('-preemptible')}
    print('normal servers: %s' % dict(collections.Counter(
        s.status for s in normals.values())))
    broken = {i: (s.status, getattr(s, 'fault', None))
              for i, s in normals.items() if s.status != 'ACTIVE'
              and not _failed_as_on_stock_nova(s, restarted)}
    assert not broken, broken

    def within_capacity():
        try:
            lab.assert_within_capacity(_settled().values())
        except AssertionError:
            return None
        return True
    lab.wait_for('every host within capacity', within_capacity)

    preempted = {i: lab.actions(i) for i in fill}
    preempted = {i: a for i, a in preempted.items() if 'opie-preempt' in a}
    assert all(a.count('opie-preempt') == 1 for a in preempted.values()), (
        preempted)
    _assert_room_was_taken(fill, set(preempted), normals)
    lab.wait_or_show('no allocation without a server',
                     lambda: not _orphans(), _orphans)


def _assert_room_was_taken(fill, preempted, normals):
    """On each host, what was preempted of ``fill`` is at most what
    normal servers took there (by their host, or by their allocations for
    one the outage failed), plus one vCPU per such server."""
    taken = collections.defaultdict(lambda: [0, 0])
    for server_id, server in normals.items():
        for host in {_host(server)} - {None} or _providers_of(server_id):
            taken[host][0] += lab.size(server)[0]
            taken[host][1] += 1
    lost = collections.Counter()
    for server_id in preempted:
        host, vcpus = fill[server_id]
        lost[host] += vcpus
    for host, vcpus in lost.items():
        room, count = taken[host]
        assert vcpus <= room + count, (host, vcpus, taken[host])


def _orphans():
    """{consumer: provider} of allocations on compute nodes whose
    consumer is no server, no migration and not OPIE's token (OPIE's
    coordination provider holds its lease, no server's)."""
    client = lab.placement()
    known = set(_all_servers()) | {
        m.uuid for m in lab.nova('lab-admin').migrations.list()}
    found = {}
    for provider in client.get('/resource_providers').json()[
            'resource_providers']:
        if provider['name'] == leader.PROVIDER_NAME:
            continue
        allocations = client.get('/resource_providers/%s/allocations'
                                 % provider['uuid']).json()['allocations']
        for consumer, held in allocations.items():
            if consumer not in known and set(held['resources']) != {
                    TOKEN_CLASS}:
                found[consumer] = provider['name']
    return found


def _stop(name):
    process.stop(lab.LAB, {name: process.recorded(lab.LAB)[name]})


def test_rabbitmq_stopped_for_a_minute():
    def fault(during):
        _stop('rabbitmq')
        during()
        time.sleep(RABBITMQ_DOWN_S)
        lab_servers.start_broker(lab.LAB)
    _assert_guarantees(_storm(fault))


def test_mariadb_stopped():
    def fault(during):
        _stop('mysql')
        during()
        time.sleep(MARIADB_DOWN_S)
        lab_servers.start_mariadb(lab.LAB)
    _assert_guarantees(_storm(fault))


@pytest.fixture
def kill_before_terminations():
    faults.arm(lab.LAB, faults.KILL_BEFORE_TERMINATIONS)
    yield
    faults.disarm(lab.LAB, faults.KILL_BEFORE_TERMINATIONS)


def test_scheduler_worker_killed_before_its_terminations(
        kill_before_terminations):
    def fault(during):
        during()
        (_, pid), = lab.wait_for('a worker to take the fault', lambda: (
            faults.taken(lab.LAB, faults.KILL_BEFORE_TERMINATIONS)))
        lab.wait_for('the worker to die', lambda: not process.running(pid))
    _assert_guarantees(_storm(fault))


def test_compute_holding_victims_stopped_and_started_again():
    index = 1

    def fault(during):
        _stop('compute-%d' % index)
        during()
        time.sleep(COMPUTE_DOWN_S)
        lab.start_computes(index)
    _assert_guarantees(_storm(fault), lab.LAB.compute_host(index))
