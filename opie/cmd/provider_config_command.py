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

"""``opie-manage provider-config``: the compute's ``provider.yaml``.

Writes the provider config (:mod:`opie.core.provider_config`) for the
compute it runs on into ``[compute] provider_config_location`` (default
``/etc/nova/provider_config/``), mirroring the standard inventory Nova
reports, so preemptible instances can fill exactly the capacity normal
ones can::

    opie-manage provider-config --config-file /etc/nova/nova.conf \\
        --output /etc/nova/provider_config/opie.yaml
    systemctl restart nova-compute

The totals are Nova's (:mod:`opie.core.sizing`): nova.conf's
``vcpu_pin_set``, ``[compute] cpu_shared_set`` and ``cpu_dedicated_set``
choose the CPUs counted as VCPU (dedicated ones, PCPU, are not mirrored),
and ``[libvirt] images_type`` where DISK_GB comes from. What Nova reads
from the host is measured unless an option says it: ``--vcpus N`` (the
host's CPUs 0 to N-1, else those ``/sys/devices/system/cpu/online``
lists), ``--memory-mb`` (else MemTotal), ``--disk-gb`` (else the size of
the file system of ``instances_path``, or with ``images_type = rbd`` the
Ceph cluster's, which ``ceph df`` gives with ``[libvirt] rbd_user`` and
``images_rbd_ceph_conf``, as Nova asks it; ``lvm`` volume groups are not
measured). Allocation ratios and reserved amounts come from nova.conf
(Nova's defaults without one). Regenerate the file and restart
nova-compute whenever any of these change; ``opie-manage audit`` reports
a compute whose inventories disagree.
"""
import json
import os
import subprocess
import sys

from opie import arguments
from opie.cmd import errors
from opie.cmd import files
from opie.cmd import nova_conf
from opie.cmd import options
from opie.core import preemptible
from opie.core import provider_config
from opie.core import resources as res
from opie.core import sizing


ONLINE_CPUS = '/sys/devices/system/cpu/online'
# Seconds `ceph df` may take.
CEPH_TIMEOUT = 60


def online_cpus(given):
    """The host's online CPUs, as libvirt lists them: CPUs 0 to
    ``given`` - 1 when given, else those the kernel lists online."""
    if given is not None:
        return set(range(given))
    try:
        with open(ONLINE_CPUS, encoding='ascii') as f:
            return sizing.parse_cpu_spec(ONLINE_CPUS, f.read())
    except (OSError, ValueError):
        return set(range(os.cpu_count() or 1))


def vcpus(conf, given):
    """VCPU as Nova counts it on this host (``given``: its CPU count)."""
    try:
        return sizing.vcpus(online_cpus(given), nova_conf.shared_cpus(conf))
    except ValueError as exc:
        raise errors.UsageError('%s: %s' % (nova_conf.where(conf), exc)) \
            from None


def detect_memory_mb():
    """Total RAM, as libvirt reports it (MemTotal)."""
    try:
        with open('/proc/meminfo', encoding='ascii') as f:
            meminfo = dict(line.split(':', 1) for line in f if ':' in line)
        return int(meminfo['MemTotal'].split()[0]) // 1024
    except (OSError, KeyError, ValueError):
        raise errors.UsageError('cannot read the RAM size from '
                                '/proc/meminfo: give --memory-mb') from None


def detect_disk_gb(conf):
    """DISK_GB as the libvirt driver measures it for
    ``[libvirt] images_type``."""
    images_type = conf.libvirt.images_type
    if images_type == sizing.RBD:
        return _ceph_disk_gb(conf.libvirt)
    if images_type == sizing.LVM:
        raise errors.UsageError(
            '[libvirt] images_type = lvm: Nova sizes the disk by volume '
            'group %s, which this command does not measure: give --disk-gb'
            % conf.libvirt.images_volume_group)
    try:
        fs = os.statvfs(conf.instances_path)
    except OSError as exc:
        raise errors.UsageError(
            'cannot size the disk of instances_path %s (%s): give '
            '--disk-gb' % (conf.instances_path, exc.strerror)) from None
    return fs.f_frsize * fs.f_blocks // sizing.GIB


def _ceph_disk_gb(libvirt):
    """The Ceph cluster's size, asked as Nova's RBDDriver asks it."""
    args = ['ceph', 'df', '--format=json']
    if libvirt.rbd_user:
        args += ['--id', libvirt.rbd_user]
    if libvirt.images_rbd_ceph_conf:
        args += ['--conf', libvirt.images_rbd_ceph_conf]
    cannot = 'cannot size Ceph pool %s (%s): give --disk-gb'
    try:
        answer = subprocess.run(args, capture_output=True, text=True,
                                check=True, timeout=CEPH_TIMEOUT).stdout
        return sizing.ceph_disk_gb(json.loads(answer),
                                   libvirt.images_rbd_pool)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise errors.UsageError(cannot % (
            libvirt.images_rbd_pool, ' '.join(str(exc).split()))) from None


def register(subparsers):
    parser = subparsers.add_parser(
        'provider-config',
        help="write a compute's provider.yaml with the preemptible "
        'inventory',
        description='Write the Nova provider config (provider.yaml) that '
        'gives this compute CUSTOM_PREEMPTIBLE_* inventory with the '
        'capacity of its standard classes. Put it in [compute] '
        'provider_config_location and restart nova-compute. Totals follow '
        "Nova's rules for nova.conf's CPU sets and image backend, from "
        'what is measured on the host unless given; allocation ratios and '
        'reserved amounts come from nova.conf.')
    options.add_nova_conf_arguments(parser, "the compute's")
    for option, what, most in (
            ('--vcpus', 'CPUs (numbered 0 to N-1; nova.conf\'s CPU sets '
             'choose those counted as VCPU)', sizing.MAX_CPUS),
            ('--memory-mb', 'RAM in MB', provider_config.PLACEMENT_MAX_TOTAL),
            ('--disk-gb', 'instance disk in GB (the Ceph cluster\'s with '
             'images_type = rbd)', provider_config.PLACEMENT_MAX_TOTAL)):
        parser.add_argument(option, metavar='N',
                            type=arguments.whole_number(1, most),
                            help='total %s of the host (default: measured)'
                            % what)
    parser.add_argument('--output', default='-', metavar='FILE',
                        help='file to write, "-" for stdout (default)')
    parser.set_defaults(func=command)


def command(args):
    conf = nova_conf.load(args.config_file, args.config_dir)
    total = res.Resources(
        vcpus(conf, args.vcpus),
        args.memory_mb if args.memory_mb is not None else detect_memory_mb(),
        args.disk_gb if args.disk_gb is not None else detect_disk_gb(conf))
    ratios = nova_conf.allocation_ratios(conf)
    reserved = nova_conf.reserved(conf)
    try:
        document = provider_config.build(total, ratios, reserved)
    except ValueError as exc:
        raise errors.UsageError(str(exc)) from None
    text = provider_config.dump(document, total, ratios, reserved)
    if args.output == '-':
        sys.stdout.write(text)
    else:
        # Readable by nova-compute, whoever runs this.
        files.write(args.output, text, mode=0o644)
        print('wrote %s: %s' % (args.output, ', '.join(
            '%s %d' % (name, amount)
            for name, amount in zip(preemptible.CUSTOM, total))))
    return 0
