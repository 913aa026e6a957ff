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

"""Which flavors the scheduler treats as preemptible.

A flavor counts as preemptible only when it is marked
``opie:preemptible=true`` *and* keeps the whole contract of
:mod:`opie.core.flavor_spec`. One that is marked but breaks it (its
``resources:`` overrides missing or wrong, or asking for what preemption
cannot free) would be miscounted: Placement charges its servers to the
standard classes, where OPIE counts normal servers, while OPIE would also
list them as preemptible, so a normal request would take an extra victim.
The scheduler treats such a flavor as a normal one instead, which is what
Placement's allocations say it is: its servers are never victims, and a
request for it is a normal request.

A preemptible flavor's terms (:func:`terms`: its tier, minimum uptime,
notice and maximum lifetime) are read from the same extra specs. A bad
value is read as the term's default, never guessed at, and never stops the
scheduler; the audit names it with its fix
(:func:`opie.core.flavor_spec.terms`).

The check runs for every instance on every host a request looks at, so
its verdict is kept per flavor (as the instance or the request carries
it: name, size and extra specs), and the warning that names the flavor
and its fix is logged once per flavor per scheduler process; terms
alike.
"""
import nova.conf
from oslo_log import log as logging

from opie.core import contract
from opie import oneline
from opie.core import flavor_spec
from opie.nova import conf as opie_conf  # noqa: F401 ([opie] registered)

CONF = nova.conf.CONF
LOG = logging.getLogger(__name__)
_VERDICTS = {}
_TERMS = {}
# Flavors are few; the bound only keeps a pathological cloud in check (a
# flavor seen again after the reset is warned about again).
_CACHE_LIMIT = 1024


def core_flavor(flavor):
    """A Nova Flavor (its own or an instance's copy) as the core sees it."""
    return flavor_spec.Flavor(
        flavor.name, flavor.vcpus, flavor.memory_mb, flavor.root_gb,
        flavor.ephemeral_gb, flavor.swap, dict(flavor.extra_specs))


def _key(flavor):
    return (flavor.name, flavor.vcpus, flavor.memory_mb, flavor.root_gb,
            flavor.ephemeral_gb, flavor.swap,
            tuple(sorted(flavor.extra_specs.items())))


def is_preemptible(flavor):
    """Is ``flavor`` preemptible as OPIE counts it? Marked, and keeping
    the contract; a marked one that does not is warned about once."""
    if not contract.is_preemptible(flavor.extra_specs):
        return False
    key = _key(flavor)
    verdict = _VERDICTS.get(key)
    if verdict is None:
        refused = flavor_spec.refusal(core_flavor(flavor))
        if refused is not None:
            LOG.warning('OPIE: %s', refused)
        verdict = refused is None
        if len(_VERDICTS) >= _CACHE_LIMIT:
            _VERDICTS.clear()
        _VERDICTS[key] = verdict
    return verdict


def terms(flavor):
    """The :class:`~opie.core.flavor_spec.Terms` of a preemptible
    ``flavor`` (an instance's copy: the terms it was booted with), its
    unset terms at their defaults (``[opie] minimum_uptime``,
    ``preemption_notice``, ``maximum_lifetime``); a bad value is read as
    its default and warned about once."""
    defaults = (CONF.opie.minimum_uptime, CONF.opie.preemption_notice,
                CONF.opie.maximum_lifetime)
    key = _key(flavor) + defaults
    found = _TERMS.get(key)
    if found is None:
        found, _ = flavor_spec.terms(flavor.extra_specs, *defaults)
        for bad in flavor_spec.terms_problems(core_flavor(flavor)):
            LOG.warning('OPIE: %s', oneline.escape('%s: %s; fix: %s' % (
                bad.subject, bad.message, bad.fix)))
        if len(_TERMS) >= _CACHE_LIMIT:
            _TERMS.clear()
        _TERMS[key] = found
    return found
