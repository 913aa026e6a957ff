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

"""How Nova's libvirt driver sizes a compute's VCPU and DISK_GB.

The provider config (:mod:`.provider_config`) gives the
``CUSTOM_PREEMPTIBLE_*`` classes the totals Nova 34 reports for the
standard ones (``nova/virt/libvirt/driver.py``, ``update_provider_tree``);
these are its rules, from the nova.conf options the operator tunes:

* VCPU is the number of CPUs of ``_get_vcpu_available``: those of the
  legacy ``[DEFAULT] vcpu_pin_set`` if set (it wins over
  ``[compute] cpu_shared_set``), else of ``cpu_shared_set``, else none if
  ``[compute] cpu_dedicated_set`` is set, else every online CPU. The CPUs
  of ``cpu_dedicated_set`` are PCPU, which OPIE does not mirror:
  preemptible flavors never pin CPUs (:mod:`.flavor_spec` refuses
  ``hw:cpu_policy``), and a PCPU freed by preemption would serve nothing.
  A compute without VCPU gets no ``CUSTOM_PREEMPTIBLE_VCPU`` either.
* DISK_GB is ``_get_local_gb_info``'s total: the Ceph cluster's raw size
  (``ceph df``) with ``[libvirt] images_type = rbd``, the volume group's
  with ``lvm``, else the file system of ``instances_path``
  (:func:`ceph_disk_gb` reads the first from ``ceph df``'s answer).

What nova-compute refuses to start with (``_check_cpu_set_configuration``)
or to report (CPUs that are not online) is a ValueError here, in one line.
"""
RBD = 'rbd'
LVM = 'lvm'
GIB = 1024 ** 3
# The most CPUs a Linux kernel supports (CONFIG_NR_CPUS): a CPU set naming
# more is a typo, and expanding it would fill memory.
MAX_CPUS = 8192


def parse_cpu_spec(option, spec):
    """The CPU ids of a CPU set option (``1-4,^3,6``), as Nova's
    ``nova.virt.hardware.parse_cpu_spec`` reads it; a malformed rule is
    a ValueError naming ``option``."""
    wanted, rejected = set(), set()
    for rule in spec.split(','):
        rule = rule.strip()
        if not rule:
            continue
        reject = rule.startswith('^')
        first, dash, last = (rule[1:] if reject else rule).partition('-')
        if not dash:
            start = end = _cpu_id(option, rule,
                                  'exclusion' if reject else 'inclusion',
                                  first)
        else:
            start = _cpu_id(option, rule, 'range', first)
            end = _cpu_id(option, rule, 'range', last)
            if start > end:
                raise ValueError('%s: invalid range expression %r'
                                 % (option, rule))
        if reject:
            # Excluding a CPU no host has excludes nothing (Nova accepts
            # it): only those a host may have are listed.
            rejected.update(range(start, min(end, MAX_CPUS - 1) + 1))
            continue
        if end >= MAX_CPUS:
            raise ValueError('%s: CPU %d in %r is not one of the %d CPUs '
                             'Linux supports' % (option, end, rule, MAX_CPUS))
        wanted.update(range(start, end + 1))
    return wanted - rejected


def _cpu_id(option, rule, kind, text):
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError('%s: invalid %s expression %r'
                         % (option, kind, rule)) from None


def _cpu_set(option, spec):
    """A set option's CPUs, None when unset; Nova refuses one that names
    no CPU."""
    if not spec:
        return None
    cpus = parse_cpu_spec(option, spec)
    if not cpus:
        raise ValueError('%s: %r names no CPU, so nova-compute will not '
                         'start' % (option, spec))
    return cpus


def shared_cpus(vcpu_pin_set=None, cpu_shared_set=None,
                cpu_dedicated_set=None, reserved_host_cpus=0):
    """The CPUs Nova reports as VCPU, from nova.conf alone: a set (empty
    when every CPU is dedicated), or None for every online CPU.

    The combinations nova-compute refuses to start with are a ValueError:
    shared and dedicated sets that overlap, ``reserved_host_cpus`` beside
    either, ``vcpu_pin_set`` beside ``cpu_dedicated_set``.
    """
    pinned = _cpu_set('[DEFAULT] vcpu_pin_set', vcpu_pin_set)
    shared = _cpu_set('[compute] cpu_shared_set', cpu_shared_set)
    dedicated = _cpu_set('[compute] cpu_dedicated_set', cpu_dedicated_set)
    if pinned is not None:
        if dedicated is not None:
            raise ValueError('[DEFAULT] vcpu_pin_set cannot be set beside '
                             '[compute] cpu_dedicated_set (nova-compute '
                             'will not start): unset vcpu_pin_set')
        return pinned
    if shared is None and dedicated is None:
        return None
    if shared and dedicated and shared & dedicated:
        raise ValueError('[compute] cpu_shared_set and cpu_dedicated_set '
                         'must be disjoint, both name CPUs %s (nova-compute '
                         'will not start)' % _cpu_list(shared & dedicated))
    if reserved_host_cpus:
        raise ValueError('[DEFAULT] reserved_host_cpus cannot be set beside '
                         '[compute] cpu_shared_set or cpu_dedicated_set '
                         '(nova-compute will not start): unset it')
    return shared or set()


def vcpus(online, shared):
    """Nova's VCPU total: the ``shared`` CPUs of :func:`shared_cpus` (all
    ``online`` ones if None), each of which must be online."""
    if shared is None:
        return len(online)
    offline = shared - set(online)
    if offline:
        raise ValueError('the VCPU set names CPUs %s that are not online '
                         '(online: %s), so nova-compute reports no '
                         'inventory' % (_cpu_list(offline),
                                        _cpu_list(online)))
    return len(shared)


def _cpu_list(cpus):
    return ','.join(str(cpu) for cpu in sorted(cpus))


def ceph_disk_gb(df, pool):
    """Nova's DISK_GB total with ``images_type = rbd``, from the
    ``ceph df --format=json`` answer ``df``: the cluster's raw size, once
    ``pool`` exists."""
    try:
        names = [p['name'] for p in df['pools']]
        total = int(df['stats']['total_bytes'])
    except (TypeError, KeyError, ValueError, OverflowError):
        raise ValueError('ceph df gave no pools and stats.total_bytes') \
            from None
    if pool not in names:
        raise ValueError('Ceph has no pool %s ([libvirt] images_rbd_pool), '
                         'so nova-compute reports no inventory' % pool)
    return total // GIB
