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

"""What the extra specs of a preemptible flavor must be.

The flavor side of the contract :mod:`.preemptible` names, Nova-free: a
preemptible flavor keeps its size (the virt driver sizes the guest from
it) but moves what it asks of Placement from the standard classes to the
``CUSTOM_PREEMPTIBLE_*`` ones. ``opie-manage flavor create-preemptible``
and the demo cloud build those extra specs with :func:`preemptible_specs`;
``opie-manage audit`` checks every flavor of a cloud with :func:`check`.
A flavor marked preemptible that breaks the contract would have its room
counted twice, so the scheduler treats it as normal (:func:`refusal` says
why). A preemptible flavor also states the terms its servers are
preempted on (:class:`Terms`: ``opie:tier``, ``opie:minimum_uptime``,
``opie:notice``); a bad value is read as its default, and reported.

The terms and why: ``doc/source/design/index.rst``, "Modules in detail".
"""
import dataclasses
import math
import re

from opie.core import contract
from opie import oneline
from opie.core import preemptible
from opie.core import problems
from opie.core import resources as res


@dataclasses.dataclass(frozen=True)
class Flavor:
    """A flavor as Nova's API shows it (swap in MB, disks in GB)."""
    name: str
    vcpus: int
    memory_mb: int
    root_gb: int
    ephemeral_gb: int = 0
    swap_mb: int = 0
    extra_specs: dict = dataclasses.field(default_factory=dict)

    def size(self):
        """What Nova would ask Placement for without extra specs.

        Disk is root, ephemeral and swap rounded up to whole GB, as
        ``nova.scheduler.utils.ResourceRequest`` counts it.
        """
        return res.Resources(
            self.vcpus, self.memory_mb,
            self.root_gb + self.ephemeral_gb
            + math.ceil(self.swap_mb / 1024))


def preemptible_specs(flavor):
    """The extra specs that make a flavor of this size preemptible."""
    specs = {contract.PREEMPTIBLE_SPEC: 'true'}
    for standard, custom, amount in zip(preemptible.STANDARD,
                                        preemptible.CUSTOM, flavor.size()):
        specs[preemptible.resources_key(standard)] = '0'
        specs[preemptible.resources_key(custom)] = str(amount)
    return specs


# OPIE frees VCPU, MEMORY_MB and DISK_GB only: a normal request that needs a
# pinned CPU or a device can never get it from a preemptible instance.
def _unsupported(extra_specs):
    found = []
    policy = str(extra_specs.get('hw:cpu_policy', '')).lower()
    if policy in ('dedicated', 'mixed'):
        found.append(('hw:cpu_policy', 'CPU pinning'))
    for key in sorted(extra_specs):
        if key.startswith('resources') and key.endswith(':PCPU'):
            found.append((key, 'dedicated CPUs (PCPU)'))
        elif _unmodelled(key, extra_specs[key]):
            found.append((key, 'a resource class OPIE does not model'))
        elif _grouped(key, extra_specs[key]):
            # Placement charges a group besides the unnumbered request:
            # the room would be counted twice, or as normal.
            found.append((key, 'a request group of VCPU, MEMORY_MB or '
                               'DISK_GB, normal or preemptible'))
    if 'pci_passthrough:alias' in extra_specs:
        found.append(('pci_passthrough:alias', 'PCI devices'))
    return found


_MODELLED = frozenset(tuple(preemptible.STANDARD) + tuple(preemptible.CUSTOM))


def _unmodelled(key, value):
    """Does the extra spec ``key`` request some of a class other than the
    standard and preemptible ones (a zero amount requests nothing)?"""
    prefix, _, resource_class = key.partition(':')
    return (prefix.startswith('resources') and resource_class != 'PCPU'
            and resource_class not in _MODELLED
            and str(value).strip() != '0')


def _grouped(key, value):
    """Does ``key`` request some of a modelled class in a numbered or
    named request group (``resources1:VCPU``, ``resources_x:...``)?"""
    prefix, _, resource_class = key.partition(':')
    return (prefix.startswith('resources') and prefix != 'resources'
            and resource_class in _MODELLED and str(value).strip() != '0')


def unsupported_problems(flavor):
    """Problems of a flavor that asks for what preemption cannot free."""
    found = [problems.Problem(
        'flavor %s' % flavor.name,
        'preemptible flavors cannot use %s (%s=%s): preempting frees only '
        'VCPU, MEMORY_MB and DISK_GB' % (what, key, flavor.extra_specs[key]),
        'openstack flavor unset --property %s %s, or make the flavor '
        'normal' % (key, flavor.name))
        for key, what in _unsupported(flavor.extra_specs)]
    if flavor.vcpus < 1:
        # A server that holds no preemptible VCPU frees none: OPIE would
        # count it as room for nothing. Nova's API refuses such a flavor.
        found.append(problems.Problem(
            'flavor %s' % flavor.name,
            'has %s vCPUs: a preemptible flavor needs at least one'
            % flavor.vcpus,
            'make a preemptible flavor of at least one vCPU: opie-manage '
            'flavor create-preemptible NORMAL_FLAVOR'))
    return found


# The one command that gives a flavor marked preemptible all the extra
# specs it lacks.
SET_PREEMPTIBLE = 'opie-manage flavor set-preemptible %s'


def check(flavor):
    """Problems of one flavor, preemptible or not (a list, maybe empty)."""
    subject = 'flavor %s' % flavor.name
    value = contract.spec_value(flavor.extra_specs)
    if value not in contract.TRUE_VALUES + contract.FALSE_VALUES:
        return [problems.Problem(
            subject,
            '%s=%s is neither true nor false, so the scheduler treats the '
            'flavor as normal' % (
                contract.PREEMPTIBLE_SPEC,
                flavor.extra_specs[contract.PREEMPTIBLE_SPEC]),
            'openstack flavor set --property %s=true %s'
            % (contract.PREEMPTIBLE_SPEC, flavor.name))]
    if not contract.is_preemptible(flavor.extra_specs):
        return _custom_without_mark(flavor) + _terms_without_mark(flavor)
    found = [problems.Problem(
        subject, '%s is %s, expected %s for a preemptible flavor of %s' % (
            key, _shown(flavor.extra_specs.get(key)), wanted,
            flavor.size()),
        SET_PREEMPTIBLE % flavor.name)
        for key, wanted in missing_specs(flavor).items()]
    return found + unsupported_problems(flavor) + terms_problems(flavor)


def _shown(value):
    return 'missing' if value is None else repr(value)


def missing_specs(flavor):
    """The extra specs :data:`SET_PREEMPTIBLE` sets on a flavor marked
    preemptible: those of :func:`preemptible_specs` it lacks or has
    wrong."""
    return {key: wanted
            for key, wanted in preemptible_specs(flavor).items()
            if key != contract.PREEMPTIBLE_SPEC
            and _requested(flavor, key, flavor.extra_specs.get(key))
            != int(wanted)}


def refusal(flavor):
    """Why the scheduler must treat a flavor marked preemptible as a
    normal one, in one line; None if it is not marked or keeps the
    contract."""
    if not contract.is_preemptible(flavor.extra_specs):
        return None
    missing = missing_specs(flavor)
    unsupported = unsupported_problems(flavor)
    reasons = [p.message for p in unsupported]
    fixes = [p.fix for p in unsupported]
    if missing:
        reasons.insert(0, 'does not set %s for its size (%s)' % (
            ', '.join('%s=%s' % item for item in missing.items()),
            flavor.size()))
        fixes.insert(0, SET_PREEMPTIBLE % flavor.name)
    if not reasons:
        return None
    return oneline.escape(
        'flavor %s is marked %s=true but %s, so OPIE treats it as a normal '
        'flavor (its servers are never victims); fix: %s' % (
            flavor.name, contract.PREEMPTIBLE_SPEC, '; '.join(reasons),
            '; '.join(fixes)))


def _requested(flavor, key, value):
    """How much of the class of ``key`` Nova asks Placement for, or None
    if ``value`` is no whole number."""
    if value is None:
        # Without the extra spec Nova requests the flavor's own size of a
        # standard class and nothing of a custom one.
        size = dict(zip(map(preemptible.resources_key, preemptible.STANDARD),
                        flavor.size()))
        return size.get(key, 0)
    try:
        return int(value)
    except ValueError:
        return None


TIER_SPEC = 'opie:tier'
MINIMUM_UPTIME_SPEC = 'opie:minimum_uptime'
NOTICE_SPEC = 'opie:notice'
MAXIMUM_LIFETIME_SPEC = 'opie:maximum_lifetime'
# Bounds that keep every term a number any tool reads exactly (a snapshot
# refuses more than 18 digits); an uptime beyond a year is a normal
# server's, and as many tiers as any price list needs.
MAX_TIER = 1000
MAX_MINIMUM_UPTIME = 365 * 24 * 3600
# The scheduler holds the displacing request for the notice, inside the
# conductor's call (Nova's [DEFAULT] long_rpc_timeout, 1800 s by default):
# the longest notice any OpenStack cloud selling preemptibles gives (15
# minutes) fits in it with the clean shutdown after it.
MAX_NOTICE = 15 * 60
MAX_MAXIMUM_LIFETIME = 365 * 24 * 3600
SET_TERMS = 'opie-manage flavor set-terms %s'


@dataclasses.dataclass(frozen=True)
class Term:
    """One term: the extra spec that sets it, and its bound."""
    spec: str
    maximum: int
    default: str        # what a bad value is read as, in words
    option: str         # the ``set-terms`` option that sets it


_TERMS = (Term(TIER_SPEC, MAX_TIER, 'tier 0', '--tier'),
          Term(MINIMUM_UPTIME_SPEC, MAX_MINIMUM_UPTIME,
               '[opie] minimum_uptime', '--minimum-uptime'),
          Term(NOTICE_SPEC, MAX_NOTICE, '[opie] preemption_notice',
               '--notice'),
          Term(MAXIMUM_LIFETIME_SPEC, MAX_MAXIMUM_LIFETIME,
               '[opie] maximum_lifetime', '--maximum-lifetime'))
# Digits only: int() also takes '+1', '1_000', ' 1' and other scripts'
# digits, which no one reading the flavor would take for a number.
_WHOLE = re.compile(r'[0-9]+\Z')
# The longest value read (zeros in front allowed), and how much of a bad
# one a message shows.
_SHOWN = 40


@dataclasses.dataclass(frozen=True)
class Terms:
    """What a preemptible flavor promises its servers: their ``tier``,
    the ``minimum_uptime`` (seconds) before which they are never victims,
    the ``notice`` (seconds) a victim is given before it stops, and the
    ``maximum_lifetime`` (seconds; 0: none) after which they are ended."""
    tier: int = 0
    minimum_uptime: int = 0
    notice: int = 0
    maximum_lifetime: int = 0

    def lifetime(self):
        """Seconds after which a server is ended, None if never: its
        maximum lifetime, but never before its minimum uptime."""
        if not self.maximum_lifetime:
            return None
        return max(self.maximum_lifetime, self.minimum_uptime)


def _value(extra_specs, term):
    """The whole number ``extra_specs`` set for ``term``, or None if
    they set none; a ValueError saying what is allowed if it is bad."""
    if term.spec not in extra_specs:
        return None
    value = str(extra_specs[term.spec])
    # Length first: int() refuses 4300 digits with an error of its own.
    if (not _WHOLE.match(value) or len(value) > _SHOWN
            or int(value) > term.maximum):
        raise ValueError('%s=%r is not a whole number from 0 to %d' % (
            term.spec, value if len(value) <= _SHOWN else
            value[:_SHOWN] + '...', term.maximum))
    return int(value)


def terms(extra_specs, default_minimum_uptime=0, default_notice=0,
          default_maximum_lifetime=0):
    """``(Terms, bad)``: the terms the extra specs set, a term they leave
    unset or set badly at its default (tier 0, ``default_minimum_uptime``,
    ``default_notice``, ``default_maximum_lifetime``); ``bad`` has
    ``(term, one line saying what is wrong and what is read instead)`` for
    each bad value."""
    values, bad = [], []
    for term in _TERMS:
        try:
            values.append(_value(extra_specs, term))
        except ValueError as exc:
            values.append(None)
            bad.append((term, '%s, so the scheduler reads it as %s'
                        % (exc, term.default)))
    tier, uptime, notice, lifetime = values
    return Terms(0 if tier is None else tier,
                 default_minimum_uptime if uptime is None else uptime,
                 default_notice if notice is None else notice,
                 default_maximum_lifetime if lifetime is None
                 else lifetime), bad


def terms_problems(flavor):
    """Problems of the terms of a preemptible ``flavor``: each bad value,
    and what the scheduler makes of it; a maximum lifetime it sets below
    the minimum uptime it sets."""
    read, bad = terms(flavor.extra_specs)
    found = [problems.Problem('flavor %s' % flavor.name, message,
                              '%s %s N' % (SET_TERMS % flavor.name,
                                           term.option))
             for term, message in bad]
    if 0 < read.maximum_lifetime < read.minimum_uptime:
        found.append(problems.Problem(
            'flavor %s' % flavor.name,
            '%s=%d is below %s=%d: a server is ended only once its minimum '
            'uptime is over, so its maximum lifetime is %d s' % (
                MAXIMUM_LIFETIME_SPEC, read.maximum_lifetime,
                MINIMUM_UPTIME_SPEC, read.minimum_uptime,
                read.minimum_uptime),
            '%s --maximum-lifetime N (N >= %d, or 0 for none)' % (
                SET_TERMS % flavor.name, read.minimum_uptime)))
    return found


def _terms_without_mark(flavor):
    keys = [t.spec for t in _TERMS if t.spec in flavor.extra_specs]
    if not keys:
        return []
    return [problems.Problem(
        'flavor %s' % flavor.name,
        'sets %s but is not preemptible: terms of preemption mean nothing '
        'to its servers' % ', '.join(keys),
        'openstack flavor unset %s %s' % (
            ' '.join('--property %s' % key for key in keys), flavor.name))]


def _custom_without_mark(flavor):
    keys = sorted(k for k in flavor.extra_specs
                  if k.startswith('resources')
                  and k.partition(':')[2] in preemptible.CUSTOM)
    if not keys:
        return []
    return [problems.Problem(
        'flavor %s' % flavor.name,
        'requests %s but is not marked %s=true, so OPIE sees its servers '
        'as normal ones it cannot preempt'
        % (', '.join(keys), contract.PREEMPTIBLE_SPEC),
        'openstack flavor set --property %s=true %s'
        % (contract.PREEMPTIBLE_SPEC, flavor.name))]
