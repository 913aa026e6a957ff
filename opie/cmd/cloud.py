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

"""Connecting ``opie-manage`` to a cloud: clouds.yaml or ``OS_*``.

``--os-cloud NAME`` (or ``OS_CLOUD``) picks a cloud of clouds.yaml;
without one, the usual ``OS_AUTH_URL``, ``OS_USERNAME``, ... variables are
used, as by the ``openstack`` client (:mod:`opie.clouds`, openstacksdk's
config loader, makes the keystoneauth1 session); Nova is called through
python-novaclient, Placement through a keystoneauth1 adapter. The
commands need admin credentials: flavors are admin-owned, and hypervisors
and resource providers admin-only.
"""
import contextlib

from keystoneauth1 import adapter
from keystoneauth1 import exceptions as ks_exceptions
from novaclient import client as nova_client
from novaclient import exceptions as nova_exceptions

from opie import clouds
from opie.cmd import errors
from opie.core import flavor_spec

# 2.53: hypervisor ids are compute node (= resource provider) uuids;
# 2.55: flavor descriptions; 2.61: extra specs in flavor listings.
COMPUTE_API_VERSION = '2.61'
# Consumers with their project, user and generation (1.28), resource
# classes (1.7) and providers by name (1.14).
PLACEMENT_VERSION = '1.28'


class Cloud:
    """Clients for Nova (novaclient) and Placement on one session.

    ``services`` maps a service type to the keystoneauth endpoint
    arguments (``region_name``, ``interface``, ``endpoint_override``) of
    that service; by default the session's auth plugin finds it.
    """

    def __init__(self, session, services=None):
        services = services or {}
        compute = dict(services.get('compute', {}))
        compute['endpoint_type'] = compute.pop('interface', None) or 'public'
        self.nova = nova_client.Client(COMPUTE_API_VERSION, session=session,
                                       **compute)
        self.placement = adapter.Adapter(session, service_type='placement',
                                         **services.get('placement', {}))

    def flavors(self):
        """Every flavor, public or private."""
        return _every(self.nova.flavors.list, is_public=None)

    def find_flavor(self, name_or_id):
        """The flavor with this id, else the one with this name, or
        None."""
        try:
            return self.nova.flavors.get(name_or_id)
        except nova_exceptions.NotFound:
            pass
        named = [f for f in self.flavors() if f.name == name_or_id]
        if len(named) > 1:
            raise errors.UsageError(
                '%d flavors are named %r: give the id instead' % (
                    len(named), name_or_id))
        return named[0] if named else None

    def compute_nodes(self, detailed=False):
        """Every compute node (hypervisor) of every cell."""
        return _every(self.nova.hypervisors.list, detailed=detailed)

    def inventories(self, provider_uuid):
        """{resource class: inventory} of a resource provider, or None if
        Placement does not know it."""
        try:
            response = self.placement.get(
                '/resource_providers/%s/inventories' % provider_uuid)
        except ks_exceptions.NotFound:
            return None
        return response.json()['inventories']

    def placement_client(self):
        """Placement through the interface of Nova's report client
        (``get``, ``post``, ``put``, ``delete`` answering a response
        whatever its status), for code the scheduler shares."""
        return PlacementClient(self.placement)

    def placement_get(self, url):
        """The decoded body of a Placement GET, or None on 404."""
        try:
            return self.placement.get(
                url, microversion=PLACEMENT_VERSION).json()
        except ks_exceptions.NotFound:
            return None

    def placement_delete(self, url):
        """A Placement DELETE: True if done, False if Placement refused
        because something uses what it deletes (409), None if there was
        nothing to delete."""
        try:
            self.placement.delete(url, microversion=PLACEMENT_VERSION)
        except ks_exceptions.NotFound:
            return None
        except ks_exceptions.Conflict:
            return False
        return True

    def server_action(self, action, uuid):
        """novaclient's ``servers.<action>(uuid)`` (``delete``,
        ``shelve``, ``shelve_offload``): None if Nova took it, else its
        refusal (409: a state that forbids it) as one line."""
        try:
            getattr(self.nova.servers, action)(uuid)
        except nova_exceptions.Conflict as exc:
            return ' '.join(str(exc).split())
        return None

    def server(self, uuid):
        """The server ``uuid`` of any project, or None."""
        try:
            return self.nova.servers.get(uuid)
        except nova_exceptions.NotFound:
            return None


class PlacementClient:
    """A keystoneauth adapter of Placement as Nova's report client calls
    it: a microversion per call, the response whatever its status."""

    def __init__(self, placement):
        self._placement = placement

    def get(self, url, version=None, global_request_id=None):
        return self._placement.get(url, microversion=version,
                                   raise_exc=False)

    def post(self, url, data, version=None, global_request_id=None):
        return self._placement.post(url, json=data, microversion=version,
                                    raise_exc=False)

    def put(self, url, data, version=None, global_request_id=None):
        return self._placement.put(url, json=data, microversion=version,
                                   raise_exc=False)

    def delete(self, url, version=None, global_request_id=None):
        return self._placement.delete(url, microversion=version,
                                      raise_exc=False)


def _every(list_page, **kwargs):
    """Every item of a listing Nova pages (at most ``[api] max_limit``
    items per answer, 1000 by default): pages asked for after the last
    item of the one before, until one comes back empty."""
    found = []
    page = list_page(**kwargs)
    while page:
        found += page
        page = list_page(marker=page[-1].id, **kwargs)
    return found


@contextlib.contextmanager
def errors_as_usage():
    """Turn what a cloud can answer (unreachable, refused credentials,
    missing rights) into a one-line :class:`~errors.UsageError`."""
    try:
        yield
    except (ks_exceptions.ClientException,
            nova_exceptions.ClientException) as exc:
        raise errors.UsageError('cloud: %s' % ' '.join(
            str(exc).split())) from None


def connect(args):
    """The :class:`Cloud` the ``--os-*`` arguments (or OS_*) point to.

    Call it inside :func:`errors_as_usage`, as every caller does.
    """
    try:
        conn = clouds.connect(args.os_cloud, args.os_region_name)
    except clouds.ConfigError as exc:
        raise errors.UsageError(str(exc)) from None
    services = {}
    for service in ('compute', 'placement'):
        services[service] = conn.endpoint_args(service)
        del services[service]['service_type']
    return Cloud(conn.session, services)


def flavor_of(flavor):
    """A novaclient flavor as a :class:`~opie.core.flavor_spec.Flavor`."""
    extra_specs = getattr(flavor, 'extra_specs', None)
    if extra_specs is None:
        extra_specs = flavor.get_keys()
    return flavor_spec.Flavor(
        name=flavor.name, vcpus=flavor.vcpus, memory_mb=flavor.ram,
        root_gb=flavor.disk, ephemeral_gb=flavor.ephemeral or 0,
        # Before microversion 2.75 Nova shows no swap as ''.
        swap_mb=flavor.swap or 0, extra_specs=dict(extra_specs))
