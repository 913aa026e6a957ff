"""Clients of the running lab, as its tenants and its admin see it.

Sessions come from the lab's clouds.yaml through openstacksdk's config
loader and keystoneauth1; Nova is driven through python-novaclient and
Placement through a keystoneauth1 adapter, the code paths OPIE's users
take.
"""
import functools
import time

from keystoneauth1 import adapter
import novaclient
from novaclient import client as nova_client
from novaclient import exceptions as nova_exc

from opie.lab import bootstrap
from opie.lab import process
from opie.lab import settings

LAB = settings.Lab.load()
IMAGE = bootstrap.IMAGE
PLACEMENT_VERSION = '1.39'
# The newest microversion python-novaclient speaks.
NOVA_VERSION = novaclient.API_MAX_VERSION.get_string()
# Seconds to wait for Nova to build or delete servers.
TIMEOUT = 180


def require_up():
    """Why the lab cannot be tested, or None."""
    if not LAB.clouds_yaml.exists():
        return 'the lab was never started (python3 tools/lab.py up)'
    running = process.recorded(LAB)
    if 'nova-api' not in running or 'opie-scheduler' not in running:
        return 'the lab is not up (python3 tools/lab.py up)'
    return None


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


def settled(ids):
    """The servers ``ids`` once none is building: {id: server}, as the
    admin sees them (deleted ones are left out)."""
    client = nova('lab-admin')

    def check():
        servers = {s.id: s for s in client.servers.list(
            search_opts={'all_tenants': 1, 'deleted': False})
            if s.id in ids}
        if any(s.status == 'BUILD' for s in servers.values()):
            return None
        # In a list: no servers left is an answer too.
        return [servers]
    servers, = wait_for('servers to build', check)
    return servers


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
