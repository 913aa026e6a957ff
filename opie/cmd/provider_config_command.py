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

Capacity is detected as the libvirt driver sees it (online CPUs, total
RAM, size of the file system of ``instances_path``) unless ``--vcpus``,
``--memory-mb`` or ``--disk-gb`` say otherwise; allocation ratios and
reserved amounts come from nova.conf (Nova's defaults without one).
Regenerate the file and restart nova-compute whenever they change;
``opie-manage audit`` reports a compute whose inventories disagree.
"""
import os
import sys

from opie import arguments
from opie.cmd import errors
from opie.cmd import files
from opie.cmd import nova_conf
from opie.cmd import options
from opie.core import preemptible
from opie.core import provider_config
from opie.core import resources as res


def detect_vcpus(conf):
    """Online CPUs, as libvirt counts them."""
    return os.cpu_count() or 1


def detect_memory_mb(conf):
    """Total RAM, as libvirt reports it (MemTotal)."""
    try:
        with open('/proc/meminfo', encoding='ascii') as f:
            meminfo = dict(line.split(':', 1) for line in f if ':' in line)
        return int(meminfo['MemTotal'].split()[0]) // 1024
    except (OSError, KeyError, ValueError):
        raise errors.UsageError('cannot read the RAM size from '
                                '/proc/meminfo: give --memory-mb') from None


def detect_disk_gb(conf):
    """Size of the file system of ``instances_path``, as libvirt reports
    it for local disks."""
    try:
        fs = os.statvfs(conf.instances_path)
    except OSError as exc:
        raise errors.UsageError(
            'cannot size the disk of instances_path %s (%s): give '
            '--disk-gb' % (conf.instances_path, exc.strerror)) from None
    return fs.f_frsize * fs.f_blocks // 1024 ** 3


DETECTORS = res.Resources(detect_vcpus, detect_memory_mb, detect_disk_gb)


def register(subparsers):
    parser = subparsers.add_parser(
        'provider-config',
        help="write a compute's provider.yaml with the preemptible "
        'inventory',
        description='Write the Nova provider config (provider.yaml) that '
        'gives this compute CUSTOM_PREEMPTIBLE_* inventory with the '
        'capacity of its standard classes. Put it in [compute] '
        'provider_config_location and restart nova-compute. Capacity is '
        'detected unless given; allocation ratios and reserved amounts '
        'come from nova.conf.')
    options.add_nova_conf_arguments(parser, "the compute's")
    for option, what in (('--vcpus', 'CPUs'), ('--memory-mb', 'RAM in MB'),
                         ('--disk-gb', 'instance disk in GB')):
        parser.add_argument(option, metavar='N',
                            type=arguments.whole_number(1),
                            help='total %s of the host (default: detected)'
                            % what)
    parser.add_argument('--output', default='-', metavar='FILE',
                        help='file to write, "-" for stdout (default)')
    parser.set_defaults(func=command)


def command(args):
    conf = nova_conf.load(args.config_file, args.config_dir)
    total = res.Resources(*(
        given if given is not None else detect(conf)
        for given, detect in zip((args.vcpus, args.memory_mb, args.disk_gb),
                                 DETECTORS)))
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
