"""What the extra specs of a preemptible flavor must be.

The flavor side of the contract :mod:`.preemptible` names, Nova-free: a
preemptible flavor keeps its size (the virt driver sizes the guest from
it) but moves what it asks of Placement from the standard classes to the
``CUSTOM_PREEMPTIBLE_*`` ones. ``opie-manage flavor create-preemptible``
and the demo cloud build those extra specs with :func:`preemptible_specs`;
``opie-manage audit`` checks every flavor of a cloud with :func:`check`.
"""
import dataclasses
import math

from opie.core import preemptible as rc
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
    specs = {rc.PREEMPTIBLE_SPEC: 'true'}
    for standard, custom, amount in zip(rc.STANDARD, rc.CUSTOM,
                                        flavor.size()):
        specs[rc.resources_key(standard)] = '0'
        specs[rc.resources_key(custom)] = str(amount)
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
    if 'pci_passthrough:alias' in extra_specs:
        found.append(('pci_passthrough:alias', 'PCI devices'))
    return found


def unsupported_problems(flavor):
    """Problems of a flavor that asks for what preemption cannot free."""
    return [problems.Problem(
        'flavor %s' % flavor.name,
        'preemptible flavors cannot use %s (%s=%s): preempting frees only '
        'VCPU, MEMORY_MB and DISK_GB' % (what, key, flavor.extra_specs[key]),
        'openstack flavor unset --property %s %s, or make the flavor '
        'normal' % (key, flavor.name))
        for key, what in _unsupported(flavor.extra_specs)]


def check(flavor):
    """Problems of one flavor, preemptible or not (a list, maybe empty)."""
    subject = 'flavor %s' % flavor.name
    value = rc.spec_value(flavor.extra_specs)
    if value not in rc.TRUE_VALUES + rc.FALSE_VALUES:
        return [problems.Problem(
            subject,
            '%s=%s is neither true nor false, so the scheduler treats the '
            'flavor as normal' % (rc.PREEMPTIBLE_SPEC,
                                  flavor.extra_specs[rc.PREEMPTIBLE_SPEC]),
            'openstack flavor set --property %s=true %s'
            % (rc.PREEMPTIBLE_SPEC, flavor.name))]
    if not rc.is_preemptible(flavor.extra_specs):
        return _custom_without_mark(flavor)
    found = []
    for key, wanted in preemptible_specs(flavor).items():
        actual = flavor.extra_specs.get(key)
        if key == rc.PREEMPTIBLE_SPEC or _requested(
                flavor, key, actual) == int(wanted):
            continue
        found.append(problems.Problem(
            subject,
            '%s is %s, expected %s for a preemptible flavor of %s' % (
                key, 'missing' if actual is None else repr(actual), wanted,
                flavor.size()),
            'openstack flavor set --property %s=%s %s'
            % (key, wanted, flavor.name)))
    return found + unsupported_problems(flavor)


def _requested(flavor, key, value):
    """How much of the class of ``key`` Nova asks Placement for, or None
    if ``value`` is no whole number."""
    if value is None:
        # Without the extra spec Nova requests the flavor's own size of a
        # standard class and nothing of a custom one.
        size = dict(zip(map(rc.resources_key, rc.STANDARD), flavor.size()))
        return size.get(key, 0)
    try:
        return int(value)
    except ValueError:
        return None


def _custom_without_mark(flavor):
    keys = sorted(k for k in flavor.extra_specs
                  if k.startswith('resources')
                  and k.partition(':')[2] in rc.CUSTOM)
    if not keys:
        return []
    return [problems.Problem(
        'flavor %s' % flavor.name,
        'requests %s but is not marked %s=true, so OPIE sees its servers '
        'as normal ones it cannot preempt'
        % (', '.join(keys), rc.PREEMPTIBLE_SPEC),
        'openstack flavor set --property %s=true %s'
        % (rc.PREEMPTIBLE_SPEC, flavor.name))]
