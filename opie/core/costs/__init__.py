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

"""Preemption costs: what it costs the provider to kill an instance.

A cost plugin prices one preemptible instance; the price of a victim set is
the sum over its members (plus a per-set constant some plugins need, see
:class:`base.Cost.offset`). Plugins are stevedore extensions in the
``opie.costs`` namespace, so a provider adds its own business model without
touching OPIE; several combine with multipliers::

    load_cost_model('period')                 # the paper's Algorithm 4
    load_cost_model('period=1.0,count=60')    # ... plus one minute per victim
    load_cost_model({'age': 1.0})

Multipliers must be finite and above 0: victim selection relies on a
victim never making a set cheaper, and a plugin multiplied by 0 only looks
as if it counted. A plugin is named once: with two multipliers it is not
clear which one the operator meant.
"""

from stevedore import extension

from opie.core import host as host_mod

NAMESPACE = 'opie.costs'
DEFAULT_PERIOD_SECONDS = 3600


class CostModel:
    """Weighted sum of cost plugins."""

    def __init__(self, weighted):
        self.weighted = tuple(weighted)

    def instance_cost(self, instance, host, now):
        return sum(m * plugin.instance_cost(instance, host, now)
                   for plugin, m in self.weighted)

    def costs(self, instances, host, now):
        """The cost of each of ``instances``, in order."""
        now = host_mod.utc(now)
        columns = [[m * plugin.instance_cost(i, host, now)
                    for i in instances] for plugin, m in self.weighted]
        if len(columns) == 1:
            return columns[0]
        return [sum(row) for row in zip(*columns)]

    def offset(self, shortfall, host):
        return sum(m * plugin.offset(shortfall, host)
                   for plugin, m in self.weighted)

    def __str__(self):
        return ','.join('%s=%g' % (p.name, m) for p, m in self.weighted)


# The largest multiplier: a cost of any plugin stays finite when summed
# over any victim set (costs are seconds, counts or fractions).
MAX_MULTIPLIER = 1e9


def parse_weights(spec):
    """``'period=1,count=0.5'`` (or a dict) -> {name: multiplier}."""
    if isinstance(spec, dict):
        items = list(spec.items())
    else:
        items = []
        for part in str(spec).split(','):
            name, sep, value = part.strip().partition('=')
            items.append((name.strip(), value.strip() if sep else '1'))
    weights = {}
    for name, value in items:
        if not name:
            raise ValueError('empty cost plugin name in %r' % (spec,))
        try:
            multiplier = float(value)
        except (TypeError, ValueError):
            raise ValueError('cost plugin %r: multiplier %r is not a number'
                             % (name, value)) from None
        if not 0 < multiplier < float('inf'):
            raise ValueError('cost plugin %r: multiplier must be a finite '
                             'number > 0, got %r' % (name, value))
        if multiplier > MAX_MULTIPLIER:
            raise ValueError('cost plugin %r: multiplier must be at most '
                             '%g, got %r' % (name, MAX_MULTIPLIER, value))
        if name in weights:
            raise ValueError('cost plugin %r is named twice (each may be '
                             'named once, with one multiplier)' % name)
        weights[name] = multiplier
    return weights


def available():
    """Names of the installed cost plugins."""
    return sorted(extension.ExtensionManager(NAMESPACE).names())


def load_cost_model(spec, period_seconds=DEFAULT_PERIOD_SECONDS):
    """Build a :class:`CostModel` from names and multipliers.

    Raises ValueError naming the problem: an unknown plugin, a bad
    multiplier or a non-positive billing period.
    """
    if not period_seconds or period_seconds <= 0:
        raise ValueError('billing period must be > 0 seconds, got %r'
                         % (period_seconds,))
    weights = parse_weights(spec)
    if not weights:
        raise ValueError('no cost plugin named')
    manager = extension.ExtensionManager(NAMESPACE)
    plugins = {ext.name: ext.plugin for ext in manager}
    weighted = []
    for name, multiplier in weights.items():
        if name not in plugins:
            raise ValueError('unknown cost plugin %r (available: %s)'
                             % (name, ', '.join(sorted(plugins)) or 'none'))
        weighted.append((plugins[name](period_seconds=period_seconds),
                         multiplier))
    return CostModel(weighted)
