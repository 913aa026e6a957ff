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

"""``opie-manage audit --cloud``: what OPIE needs from a running cloud.

Through the compute and Placement APIs: every flavor marked preemptible
has the right extra specs and nothing preemption cannot free, no flavor
consumes the preemptible classes unmarked, at least one preemptible flavor
exists, and every compute node's resource provider has inventory of the
``CUSTOM_PREEMPTIBLE_*`` classes with the capacity of its standard ones,
and the one unit of the host token (``CUSTOM_OPIE_HOST``).
"""
from opie.cmd import audit_conf
from opie.cmd import cloud
from opie.core import contract
from opie.core import flavor_spec
from opie.core import host
from opie.core import preemptible
from opie.core import problems

PROVIDER_CONFIG_FIX = (
    'on %s: opie-manage provider-config --config-file /etc/nova/nova.conf '
    '--output /etc/nova/provider_config/opie.yaml, then restart '
    'nova-compute')


def check_flavors(flavors):
    """Problems of a cloud's flavors
    (:class:`~opie.core.flavor_spec.Flavor`)."""
    found = []
    for flavor in flavors:
        found += flavor_spec.check(flavor)
    if not any(contract.is_preemptible(f.extra_specs) for f in flavors):
        found.append(problems.Problem(
            'flavors', 'none is marked %s=true, so nobody can start a '
            'preemptible server' % contract.PREEMPTIBLE_SPEC,
            'opie-manage flavor create-preemptible NORMAL_FLAVOR'))
    return found


def check_inventories(node, inventories):
    """Problems of one compute node's inventories ({class: inventory},
    None when Placement has no provider for it)."""
    subject = 'compute node %s' % node
    if inventories is None:
        return [problems.Problem(
            subject, 'has no resource provider in Placement',
            'check that nova-compute on %s runs and reports to Placement'
            % node)]
    if preemptible.STANDARD.vcpus not in inventories:
        return []  # not a host of virtual machines (e.g. Ironic)
    fix = PROVIDER_CONFIG_FIX % node
    missing = [name for name in preemptible.PROVIDER_CONFIG_CLASSES
               if name not in inventories]
    if set(missing) - {preemptible.HOST_TOKEN}:
        return [problems.Problem(
            subject, 'has no inventory of %s, so preemptible servers cannot '
            'be placed there' % ', '.join(missing), fix)]
    found = []
    token = inventories.get(preemptible.HOST_TOKEN)
    if token is None or any(token.get(field, value) != value for field, value
                            in preemptible.HOST_TOKEN_INVENTORY.items()):
        found.append(problems.Problem(
            subject, audit_conf.TOKEN_PROBLEM % (
                'has no' if token is None else 'has a wrong',
                preemptible.HOST_TOKEN),
            fix))
    for standard, custom in zip(preemptible.STANDARD, preemptible.CUSTOM):
        if standard not in inventories:
            continue
        have = host.inventory_capacity(inventories[custom])
        want = host.inventory_capacity(inventories[standard])
        if have != want:
            found.append(problems.Problem(
                subject,
                '%s capacity is %g but %s capacity is %g, so preemptible '
                'servers can use %s than the host' % (
                    custom, have, standard, want,
                    'less' if have < want else 'more'),
                fix))
    return found


def audit(conn):
    """Problems of the cloud behind ``conn`` (a :class:`~cloud.Cloud`),
    and a line saying what was checked."""
    flavors = [cloud.flavor_of(f) for f in conn.flavors()]
    found = check_flavors(flavors)
    nodes = conn.compute_nodes()
    for node in nodes:
        found += check_inventories(node.hypervisor_hostname,
                                   conn.inventories(node.id))
    checked = '%d flavors (%d preemptible), %d compute nodes' % (
        len(flavors), sum(contract.is_preemptible(f.extra_specs)
                          for f in flavors), len(nodes))
    return found, checked
