"""``opie-manage provider-config``: the compute's ``provider.yaml``.

Every compute node needs inventory of the ``CUSTOM_PREEMPTIBLE_*`` classes
that preemptible flavors consume, and one unit of ``CUSTOM_OPIE_HOST``,
the host token every decision of the scheduler plugin on the host rewrites
(:mod:`opie.nova.token`). Nova gives it from a provider config file
in ``[compute] provider_config_location`` (default
``/etc/nova/provider_config/``), read when nova-compute starts. This
command writes that file for the compute it runs on, mirroring the
standard inventory Nova reports, so preemptible instances can fill exactly
the capacity normal ones can::

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

import yaml

from opie.cmd import arguments
from opie.cmd import errors
from opie.cmd import files
from opie.cmd import nova_conf
from opie.core import preemptible as rc
from opie.core import resources as res

SCHEMA_VERSION = '1.0'
# Nova applies a $COMPUTE_NODE entry to every compute node root provider
# the compute service manages.
COMPUTE_NODE = '$COMPUTE_NODE'
# What Placement gives inventory fields left out.
INVENTORY_DEFAULTS = {'reserved': 0, 'allocation_ratio': 1.0}


def build(total, ratios, reserved):
    """The provider config document (a dict) for one compute node.

    Each custom class gets the total, reserved amount and allocation ratio
    of its standard class, so Placement computes the same capacity,
    ``(total - reserved) * ratio``, for both; the host token's class gets
    its one unit.
    """
    additional = []
    for name, amount, ratio, held in zip(rc.CUSTOM, total, ratios,
                                         reserved):
        if amount < 1:
            raise errors.UsageError('%s: a compute needs a total of at '
                                    'least 1, got %d' % (name, amount))
        if held > amount:
            raise errors.UsageError('%s: %d reserved is more than the total '
                                    '%d' % (name, held, amount))
        additional.append({name: {'total': int(amount),
                                  'reserved': int(held),
                                  'max_unit': int(amount),
                                  'allocation_ratio': float(ratio)}})
    additional.append({rc.HOST_TOKEN: dict(rc.HOST_TOKEN_INVENTORY)})
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
                if name in rc.PROVIDER_CONFIG_CLASSES:
                    found[name] = inventory
    return found


def _list(mapping, key):
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return [item for item in value or () if isinstance(item, dict)]


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
    arguments.add_nova_conf_arguments(parser, "the compute's")
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
    text = dump(build(total, ratios, reserved), total, ratios, reserved)
    if args.output == '-':
        sys.stdout.write(text)
    else:
        # Readable by nova-compute, whoever runs this.
        files.write(args.output, text, mode=0o644)
        print('wrote %s: %s' % (args.output, ', '.join(
            '%s %d' % (name, amount)
            for name, amount in zip(rc.CUSTOM, total))))
    return 0
