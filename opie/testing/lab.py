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

"""Clients of the running lab, as its tenants and its admin see it: what
the integration tests and ``benchmarks/storm.py`` drive the lab with.

Sessions come from the lab's clouds.yaml through openstacksdk's config
loader and keystoneauth1; Nova is driven through python-novaclient and
Placement through a keystoneauth1 adapter, the code paths OPIE's users
take.
"""
import collections
import datetime
import functools
import os
import re
import subprocess
import sys
import time

from keystoneauth1 import adapter
import novaclient
from novaclient import client as nova_client
from novaclient import exceptions as nova_exc
from prometheus_client import parser

from opie.lab import bootstrap
from opie.lab import cli
from opie.lab import configs
from opie.lab import process
from opie.lab import settings
from opie.nova.periodic import heartbeat

LAB = settings.Lab.load()
IMAGE = bootstrap.IMAGE
FLAVORS = {name: (vcpus, ram, disk)
           for name, vcpus, ram, disk in bootstrap.FLAVORS}
PLACEMENT_VERSION = '1.39'
# The newest microversion python-novaclient speaks.
NOVA_VERSION = novaclient.API_MAX_VERSION.get_string()
# Seconds to wait for Nova to build or delete servers.
TIMEOUT = 180
# Where every scheduler worker writes its Prometheus textfile.
METRICS_DIR = configs.metrics_dir(LAB)


def require_up():
    """Why the lab cannot be tested, or None."""
    if not LAB.clouds_yaml.exists():
        return 'the lab was never started (python3 tools/lab.py up)'
    running = process.recorded(LAB)
    if 'nova-api' not in running or 'opie-scheduler' not in running:
        return 'the lab is not up (python3 tools/lab.py up)'
    return None


def opie_manage(*args):
    """Run ``opie-manage`` with the lab's clouds.yaml: (exit code, its
    output and errors)."""
    done = subprocess.run(
        [os.path.join(sys.prefix, 'bin', 'opie-manage')] + [
            str(a) for a in args], capture_output=True, text=True,
        env=dict(os.environ, OS_CLIENT_CONFIG_FILE=str(LAB.clouds_yaml)))
    return done.returncode, done.stdout + done.stderr


def session(cloud):
    return connect(cloud).session


def nova(cloud, version=NOVA_VERSION):
    return nova_client.Client(version, session=session(cloud))


def placement():
    return adapter.Adapter(session('lab-admin'), service_type='placement',
                           default_microversion=PLACEMENT_VERSION)


@functools.cache
def connect(cloud='lab-admin'):
    """An openstacksdk connection (keystone's limits have no novaclient),
    one per cloud: like a real client its session keeps its token, rather
    than asking keystone for a new one per request."""
    return bootstrap.connect(LAB, cloud)


def wait_for(what, check, timeout=TIMEOUT, interval=0.5):
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError('timed out after %d s waiting for %s'
                                 % (timeout, what))
        time.sleep(interval)


def wait_or_show(what, check, show=None, timeout=TIMEOUT):
    """:func:`wait_for`, whose failure shows what ``show`` (or ``check``)
    finds wrong then."""
    try:
        return wait_for(what, check, timeout)
    except AssertionError as exc:
        raise AssertionError('%s: %r' % (exc, (show or check)())) from None


def settled(ids, timeout=TIMEOUT):
    """The servers ``ids`` once none is building (within ``timeout``
    seconds): {id: server}, as the admin sees them (deleted ones are left
    out)."""
    client = nova('lab-admin')

    def servers():
        return {s.id: s for s in client.servers.list(
            search_opts={'all_tenants': 1, 'deleted': False})
            if s.id in ids}

    def building():
        return {i: (s.name, getattr(s, 'OS-EXT-STS:task_state'),
                    getattr(s, 'OS-EXT-SRV-ATTR:host'))
                for i, s in servers().items() if s.status == 'BUILD'}

    def check():
        found = servers()
        if any(s.status == 'BUILD' for s in found.values()):
            return None
        # In a list: no servers left is an answer too.
        return [found]
    found, = wait_or_show('servers to build', check, building, timeout)
    return found


def boot(client, name, flavor, count=1, **kwargs):
    """Boot ``count`` servers, one request each; their ids."""
    flavor = client.flavors.find(name=flavor)
    image = client.glance.find_image(IMAGE)
    return [client.servers.create('%s-%d' % (name, i), image, flavor,
                                  nics='none', **kwargs).id
            for i in range(count)]


def fill_with_preemptibles(client, per_host=4):
    """Fill every compute with small preemptible servers of ``client``,
    the last one booted two seconds after the others (launch times have a
    one-second resolution), so it is clearly the cheapest victim under the
    period cost; (ids of the others, id of the youngest)."""
    older = boot(client, 'filler', 'small-preemptible',
                 count=per_host * LAB.computes - 1)
    assert all(s.status == 'ACTIVE' for s in settled(set(older)).values())
    time.sleep(2)
    youngest, = boot(client, 'youngest', 'small-preemptible')
    assert settled({youngest})[youngest].status == 'ACTIVE'
    return older, youngest


def delete_all():
    """Delete every server of the lab and wait until they are gone."""
    admin = nova('lab-admin')
    for server in admin.servers.list(search_opts={'all_tenants': 1}):
        try:
            server.delete()
        except nova_exc.NotFound:
            pass
    wait_for('every server to go', lambda: not admin.servers.list(
        search_opts={'all_tenants': 1}))


def usages_and_capacity():
    """{host: (usage, capacity)} per resource class, from Placement, for
    every compute node (not OPIE's coordination provider)."""
    client = placement()
    result = {}
    for provider in client.get('/resource_providers').json()[
            'resource_providers']:
        base = '/resource_providers/%s' % provider['uuid']
        usages = client.get(base + '/usages').json()['usages']
        inventories = client.get(base + '/inventories').json()[
            'inventories']
        if 'VCPU' not in inventories:
            continue
        result[provider['name']] = {
            rc: (usages.get(rc, 0),
                 (inv['total'] - inv['reserved']) * inv['allocation_ratio'])
            for rc, inv in inventories.items()}
    return result


# Storms ---------------------------------------------------------------------
def fill_cloud(lock_every_other=False):
    """Alpha's preemptibles, mediums first, until every vCPU is taken,
    every other one locked by its owner if asked (a lock protects
    nothing from preemption); their ids."""
    alpha = nova('lab-alpha')
    vcpus = settings.COMPUTE_SIZE[0] * LAB.computes
    mediums = LAB.computes
    ids = []
    for flavor, count in (('medium-preemptible', mediums),
                          ('small-preemptible', vcpus - 2 * mediums)):
        for i in range(count):
            ids += boot(alpha, 'fill-%s-%d' % (flavor, i), flavor)
            settled(ids[-1:])
    states = collections.Counter(s.status for s in settled(ids).values())
    assert states == {'ACTIVE': len(ids)}, states
    if lock_every_other:
        for server_id in ids[::2]:
            alpha.servers.lock(server_id)
    return ids


def storm_requests():
    """(cloud, name, flavor) of a storm's concurrent boots on a full
    cloud: beta's normal servers summing to capacity minus one vCPU per
    host (they fit in any order once preemptibles go), and two of alpha's
    preemptibles."""
    room = (settings.COMPUTE_SIZE[0] - 1) * LAB.computes
    mediums = room // 3
    normals = ['medium'] * mediums + ['small'] * (room - 2 * mediums)
    return ([('lab-beta', 'normal-%d' % i, flavor)
             for i, flavor in enumerate(normals)]
            + [('lab-alpha', 'late-%d' % i, 'small-preemptible')
               for i in range(2)])


def boot_request(request):
    """Boot one server of :func:`storm_requests`; its id."""
    cloud, name, flavor = request
    # A client each: the boots really are concurrent requests.
    return boot(nova(cloud), name, flavor)[0]


def actions(server_id):
    """The names of the server's instance actions, deleted or not."""
    history = nova('lab-admin', '2.21').instance_action
    return [a.action for a in history.list(server_id)]


def size(server):
    """(vCPUs, MB, GB) of the server's flavor, as Nova embeds it in the
    server (API 2.47 and later)."""
    flavor = server.flavor
    return flavor['vcpus'], flavor['ram'], flavor['disk']


def assert_within_capacity(servers):
    """No host over capacity, by Placement's usages and by the ACTIVE
    ``servers`` Nova says each host runs."""
    for host, classes in usages_and_capacity().items():
        for resource in ('VCPU', 'MEMORY_MB', 'DISK_GB'):
            used = (classes[resource][0]
                    + classes['CUSTOM_PREEMPTIBLE_' + resource][0])
            assert used <= classes[resource][1], (host, resource, classes)
    per_host = collections.defaultdict(lambda: [0, 0, 0])
    for server in servers:
        if server.status != 'ACTIVE':
            continue
        used = per_host[getattr(server, 'OS-EXT-SRV-ATTR:host')]
        for dim, amount in enumerate(size(server)):
            used[dim] += amount
    for host, used in per_host.items():
        assert all(u <= c for u, c in zip(used, settings.COMPUTE_SIZE)), (
            host, used)


# Schedulers -----------------------------------------------------------------
def heartbeat_paths():
    """The heartbeat file of each opie-scheduler service, in start order."""
    return [LAB.data / 'nova' / 'opie-scheduler.heartbeat'] + [
        LAB.data / 'nova' / ('opie-heartbeat-%d.json' % index)
        for index in range(2, settings.SCHEDULERS + 1)]


def read_metrics():
    """The scheduler workers' Prometheus textfiles in :data:`METRICS_DIR`,
    read as node_exporter's textfile collector reads them: {(sample name,
    sorted labels but host and worker): value} summed over the workers'
    files; and {file's (host, worker): the (host, worker) pairs its
    samples name}."""
    totals, workers = {}, {}
    for name in sorted(os.listdir(METRICS_DIR)):
        match = re.match(r'^opie-scheduler\.(.+)\.(\d+)\.prom$', name)
        if not match:
            continue
        try:
            with open(os.path.join(METRICS_DIR, name),
                      encoding='utf-8') as f:
                text = f.read()
        except FileNotFoundError:
            # A worker that stopped; another removed its file.
            continue
        named = workers.setdefault(match.groups(), set())
        for family in parser.text_string_to_metric_families(text):
            for sample in family.samples:
                labels = dict(sample.labels)
                named.add((labels.pop('host'), labels.pop('worker')))
                key = (sample.name, tuple(sorted(labels.items())))
                totals[key] = totals.get(key, 0.0) + sample.value
    return totals, workers


def restart_schedulers(*extra, faults=False):
    """Restart OPIE's schedulers (see :func:`opie.lab.cli.start_schedulers`)
    and wait until a worker of each new service has written its
    heartbeat, which it does once it serves."""
    leaders = [proc.pid for proc in cli.restart_schedulers(
        LAB, *extra, faults=faults).values()]

    def beating():
        for path, leader in zip(heartbeat_paths(), leaders):
            beat = heartbeat.read(str(path)) or {}
            if beat.get('pid') not in process.members({leader}):
                return False
        return True
    wait_for('the schedulers to serve', beating)


def restart_computes(*indexes):
    """Stop the computes ``indexes`` (all by default) together and start
    them again; wait for each one's first report since (a compute down
    for less than Nova's service_down_time is never shown down, so "up"
    proves nothing)."""
    indexes = indexes or range(1, LAB.computes + 1)
    running = process.recorded(LAB)
    process.stop(LAB, {'compute-%d' % i: running['compute-%d' % i]
                       for i in indexes})
    start_computes(*indexes)


def start_computes(*indexes):
    """Start the computes ``indexes`` and wait for their first reports."""
    hosts = {LAB.compute_host(i) for i in indexes}
    started = datetime.datetime.utcnow()
    for index in indexes:
        cli.start_compute(LAB, index)

    def reported():
        return hosts <= {
            s.host for s in connect().compute.services(binary='nova-compute')
            if datetime.datetime.fromisoformat(s.updated_at) > started}
    wait_for('%s to report' % ', '.join(sorted(hosts)), reported)
