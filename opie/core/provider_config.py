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

"""The provider config (``provider.yaml``) every compute node needs.

Every compute node needs inventory of the ``CUSTOM_PREEMPTIBLE_*`` classes
that preemptible flavors consume, and one unit of ``CUSTOM_OPIE_HOST``,
the host token every decision of the scheduler plugin on the host rewrites
(:mod:`opie.nova.request.cas`). Nova gives it from a provider config file in
``[compute] provider_config_location``, read when nova-compute starts.
:func:`build` makes that document from the compute's standard inventory,
so preemptible instances can fill exactly the capacity normal ones can;
:func:`custom_inventories` reads back what a document gives.
``opie-manage provider-config`` writes it, ``opie-manage audit`` checks
it, and the functional tests' computes get it; none of that needs Nova.
"""
import yaml

from opie.core import preemptible

SCHEMA_VERSION = '1.0'
# Nova applies a $COMPUTE_NODE entry to every compute node root provider
# the compute service manages.
COMPUTE_NODE = '$COMPUTE_NODE'
# What Placement gives inventory fields left out.
INVENTORY_DEFAULTS = {'reserved': 0, 'allocation_ratio': 1.0}
# Placement refuses an inventory total above a 32-bit signed integer.
PLACEMENT_MAX_TOTAL = 2 ** 31 - 1


def build(total, ratios, reserved):
    """The provider config document (a dict) for one compute node.

    Each custom class gets the total (:mod:`.sizing` says how Nova counts
    it), reserved amount and allocation ratio of its standard class, so
    Placement computes the same capacity, ``(total - reserved) * ratio``,
    for both; a total of 0 leaves the class out, as Nova leaves out the
    standard one (a compute whose CPUs are all dedicated has no VCPU).
    The host token's class gets its one unit. A negative total, one
    below what is reserved or one above what Placement holds
    (:data:`PLACEMENT_MAX_TOTAL`: a measure gone wrong) is a ValueError
    naming the class.
    """
    additional = []
    for name, amount, ratio, held in zip(preemptible.CUSTOM, total, ratios,
                                         reserved):
        if amount < 0:
            raise ValueError('%s: a total cannot be negative, got %d'
                             % (name, amount))
        if not amount:
            continue
        if amount > PLACEMENT_MAX_TOTAL:
            raise ValueError('%s: a total of %d is more than Placement '
                             'holds (%d)' % (name, amount,
                                             PLACEMENT_MAX_TOTAL))
        if held > amount:
            raise ValueError('%s: %d reserved is more than the total %d'
                             % (name, held, amount))
        additional.append({name: {'total': int(amount),
                                  'reserved': int(held),
                                  'max_unit': int(amount),
                                  'allocation_ratio': float(ratio)}})
    additional.append(
        {preemptible.HOST_TOKEN: dict(preemptible.HOST_TOKEN_INVENTORY)})
    return {'meta': {'schema_version': SCHEMA_VERSION},
            'providers': [{'identification': {'uuid': COMPUTE_NODE},
                           'inventories': {'additional': additional}}]}


def custom_inventories(document):
    """The ``CUSTOM_PREEMPTIBLE_*`` and host token inventories a provider
    config document gives the compute node root providers: {class:
    inventory dict}."""
    found = {}
    for provider in _list(document, 'providers'):
        inventories = provider.get('inventories') or {}
        for entry in _list(inventories, 'additional'):
            for name, inventory in entry.items():
                if name in preemptible.PROVIDER_CONFIG_CLASSES:
                    found[name] = inventory
    return found


def _list(mapping, key):
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return [item for item in value or () if isinstance(item, dict)]


def dump(document, total, ratios, reserved):
    """The document as YAML, with a header saying where numbers came
    from."""
    header = ('# CUSTOM_PREEMPTIBLE_* and CUSTOM_OPIE_HOST inventory for '
              'OPIE (opie-manage provider-config).\n'
              '# Total: %s.\n'
              '# Allocation ratios: %g/%g/%g; reserved: %s.\n'
              '# Regenerate it and restart nova-compute when they change.\n'
              % ((total,) + tuple(ratios) + (reserved,)))
    return header + yaml.safe_dump(document, sort_keys=False)
