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

"""``opie-manage snapshot``: the live cloud as a snapshot ``plan`` reads.

So an operator can ask "what would this request preempt right now"
without writing JSON by hand::

    opie-manage snapshot --os-cloud admin > cloud.json
    opie-manage plan --snapshot cloud.json --flavor m1.large

Read through the APIs with admin credentials, as the scheduler sees it:

* hosts: every compute node whose service is enabled and up, with the
  capacity Placement computes from its inventory ((total - reserved) x
  allocation ratio; reserved vCPUs and disk are taken off the totals,
  reserved memory is kept as ``reserved_host_memory_mb``);
* instances: every server on those hosts, with the flavor embedded in it
  (so a deleted or edited flavor still counts as it was booted), taking
  what Nova takes for it in Placement (``resources:`` overrides, no root
  disk when volume-backed),
  preemptible by its ``opie:preemptible`` extra spec, launch time, lock,
  task state and project;
* flavors: every flavor, plus the embedded flavors of running servers
  that no longer match one; a preemptible one with its terms
  (``tier``, ``minimum_uptime``: :func:`opie.core.flavor_spec.terms`), a
  term it does not set at its default: tier 0, and the minimum uptime
  ``--default-minimum-uptime`` gives (the scheduler's ``[opie]
  minimum_uptime``, which the APIs do not show). A server booted before
  its flavor's terms changed keeps the terms it was booted with, as in
  the scheduler, so its flavor is one of those ``NAME@N``.

Nova's API does not say who locked a server; a locked server is written
as locked by an admin, which protects it (the scheduler would still
preempt a preemptible its owner locked).
"""
import datetime
import json

from opie.core import contract
from opie import arguments
from opie.cmd import options
from opie.core import flavor_spec
from opie.core import preemptible
from opie.core import snapshot


def register(subparsers):
    parser = subparsers.add_parser(
        'snapshot', help='write the live cloud as a snapshot for plan',
        description='Write the live cloud (compute nodes, their inventory, '
        'their servers with flavors, launch times and locks) as the JSON '
        'snapshot that "opie-manage plan --snapshot" reads.')
    parser.add_argument('--output', metavar='FILE',
                        help='write here instead of to standard output')
    parser.add_argument('--default-minimum-uptime', metavar='SECONDS',
                        type=arguments.whole_number(
                            0, flavor_spec.MAX_MINIMUM_UPTIME),
                        default=0,
                        help='the scheduler\'s [opie] minimum_uptime: the '
                        'minimum uptime of the preemptible flavors that set '
                        'none (default 0)')
    options.add_cloud_arguments(parser)
    parser.set_defaults(func=snapshot_command)


def _resources(vcpus, memory_mb, root_gb, ephemeral_gb, swap_mb):
    """What a flavor takes from Placement: root, ephemeral and swap disk
    together, in whole GB."""
    return {'vcpus': vcpus, 'memory_mb': memory_mb,
            'disk_gb': root_gb + ephemeral_gb + -(-swap_mb // 1024)}


def _with_terms(sizes, extra_specs, default_minimum_uptime):
    """A snapshot flavor of ``sizes``: with the terms of ``extra_specs``
    if they make it preemptible."""
    if not contract.is_preemptible(extra_specs):
        return sizes
    terms, _ = flavor_spec.terms(extra_specs, default_minimum_uptime)
    return dict(sizes, tier=terms.tier, minimum_uptime=terms.minimum_uptime)


def _embedded(flavor, volume_backed, default_minimum_uptime=0):
    """What a server's embedded flavor (API >= 2.47) takes from Placement,
    as Nova counts it: no root disk for a volume-backed server, a
    ``resources:`` extra spec in place of the size it overrides, standard
    and preemptible classes summed (h_f); with its terms."""
    sizes = _resources(flavor['vcpus'], flavor['ram'],
                       0 if volume_backed else flavor['disk'],
                       flavor.get('ephemeral') or 0, flavor.get('swap') or 0)
    specs = flavor.get('extra_specs') or {}
    return _with_terms(
        {size: _override(specs, standard, amount)
         + _override(specs, custom, 0)
         for (size, amount), standard, custom in zip(
             sizes.items(), preemptible.STANDARD, preemptible.CUSTOM)},
        specs, default_minimum_uptime)


def _override(specs, resource_class, default):
    try:
        return int(specs.get(preemptible.resources_key(resource_class),
                             default))
    except ValueError:
        # Nova boots no server of such a flavor.
        return default


def _host(node, inventories):
    def inv(rc_name):
        return inventories.get(rc_name) or {'total': 0, 'reserved': 0,
                                            'allocation_ratio': 1.0}
    vcpu, ram, disk = inv('VCPU'), inv('MEMORY_MB'), inv('DISK_GB')
    return {'name': node.hypervisor_hostname,
            'vcpus': vcpu['total'] - vcpu.get('reserved', 0),
            'memory_mb': ram['total'],
            'reserved_host_memory_mb': ram.get('reserved', 0),
            'disk_gb': disk['total'] - disk.get('reserved', 0),
            'cpu_allocation_ratio': vcpu.get('allocation_ratio', 1.0),
            'ram_allocation_ratio': ram.get('allocation_ratio', 1.0),
            'disk_allocation_ratio': disk.get('allocation_ratio', 1.0),
            'instances': []}


def _flavor_name(wanted, name, flavors):
    """The snapshot flavor of a server's embedded flavor of ``name``
    taking ``wanted``: that name, or the name with ``@N`` when a flavor
    of that name takes something else (it changed, or the server is
    volume-backed)."""
    same = [key for key, value in flavors.items() if value == wanted
            and (key == name or key.startswith(name + '@'))]
    if same:
        return same[0]
    key, n = name, 1
    while key in flavors:
        key, n = '%s@%d' % (name, n), n + 1
    flavors[key] = wanted
    return key


def _instance(server, flavors, default_minimum_uptime=0):
    embedded = server.flavor
    attrs = server.to_dict()
    # The API shows a volume-backed server's image as "".
    wanted = _embedded(embedded, not attrs.get('image'),
                       default_minimum_uptime)
    out = {'uuid': server.id, 'name': server.name,
           'project_id': attrs['tenant_id'],
           'flavor': _flavor_name(wanted, embedded['original_name'],
                                  flavors),
           'preemptible': contract.is_preemptible(
               embedded.get('extra_specs', {})),
           'launched_at': _iso(attrs.get('OS-SRV-USG:launched_at')
                               or attrs.get('created'))}
    if attrs.get('locked'):
        out['locked'] = True
    if attrs.get('OS-EXT-STS:task_state'):
        out['task_state'] = attrs['OS-EXT-STS:task_state']
    return out


def _iso(text):
    moment = datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.strftime('%Y-%m-%dT%H:%M:%SZ')


def take(conn, now=None, default_minimum_uptime=0):
    """The snapshot document of the cloud behind ``conn``
    (a :class:`opie.cmd.cloud.Cloud`)."""
    from opie.cmd import cloud
    now = now or datetime.datetime.now(datetime.timezone.utc)
    flavors = {}
    for f in map(cloud.flavor_of, conn.flavors()):
        flavors[f.name] = _with_terms(
            _resources(f.vcpus, f.memory_mb, f.root_gb, f.ephemeral_gb,
                       f.swap_mb),
            f.extra_specs, default_minimum_uptime)
    hosts = {}
    for node in conn.compute_nodes(detailed=True):
        if node.status != 'enabled' or node.state != 'up':
            continue
        hosts[node.hypervisor_hostname] = _host(
            node, conn.inventories(node.id) or {})
    servers = conn.nova.servers.list(detailed=True, search_opts={
        'all_tenants': True}, limit=-1)
    for server in servers:
        node = getattr(server, 'OS-EXT-SRV-ATTR:hypervisor_hostname', None)
        if node in hosts:
            hosts[node]['instances'].append(
                _instance(server, flavors, default_minimum_uptime))
    document = {
        'description': 'opie-manage snapshot of the live cloud: %d '
                       'enabled compute nodes that are up' % len(hosts),
        'now': now.strftime('%Y-%m-%dT%H:%M:%SZ'),
        'flavors': flavors,
        'hosts': [hosts[name] for name in sorted(hosts)]}
    # What plan will read must parse: fail here, not in the next command.
    snapshot.parse(document)
    return document


def snapshot_command(args):
    # Loaded here: declaring the command must not load the cloud clients.
    from opie.cmd import cloud
    with cloud.errors_as_usage():
        document = take(cloud.connect(args),
                        default_minimum_uptime=args.default_minimum_uptime)
    text = json.dumps(document, indent=1, sort_keys=True) + '\n'
    if args.output:
        with open(args.output, 'w', encoding='utf-8') as f:
            f.write(text)
    else:
        print(text, end='')
    return 0
