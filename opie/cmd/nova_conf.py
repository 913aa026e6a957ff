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

"""Reading nova.conf without Nova: the options OPIE's tools look at.

``opie-manage provider-config`` reads a compute's allocation ratios,
reserved amounts, CPU sets and image backend from it, ``opie-manage
audit`` the scheduler's filters and weighers, the ``[opie]`` group and the
computes' shelve, CPU set and provider config settings; ``opie-manage
nova-conf`` adds OPIE's filter and weighers to those there, Nova's
defaults if unset. Files are read as Nova reads them
(oslo.config: several ``--config-file`` merged in order, ``$state_path``
interpolation, repeated ``available_filters`` lines). The few Nova options
needed are declared here with Nova's defaults, so the tools run on hosts
without Nova; the ``[opie]`` group is the scheduler plugin's own
declaration.
"""
import glob
import importlib.util
import math
import os

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from opie.cmd import errors
from opie.cmd import inifile
from opie.core import resources as res
from opie.core import sizing
from opie.nova import conf as opie_conf


def _nova_pybasedir():
    """Nova's default ``pybasedir``: where the nova package is installed,
    found without importing it ('' if Nova is not installed here)."""
    spec = importlib.util.find_spec('nova')
    if spec is None or not spec.origin:
        return ''
    return os.path.dirname(os.path.dirname(spec.origin))


# Declarations copied from nova/conf (nova 34); a functional test
# (tests/functional/plugin/test_nova_agrees.py) checks that the types and
# defaults still match Nova's.
DEFAULT_OPTS = [
    cfg.StrOpt('pybasedir', default=_nova_pybasedir()),
    cfg.StrOpt('state_path', default='$pybasedir'),
    cfg.StrOpt('instances_path', default='$state_path/instances'),
    cfg.FloatOpt('cpu_allocation_ratio'),
    cfg.FloatOpt('ram_allocation_ratio'),
    cfg.FloatOpt('disk_allocation_ratio'),
    cfg.FloatOpt('initial_cpu_allocation_ratio', default=4.0),
    cfg.FloatOpt('initial_ram_allocation_ratio', default=1.0),
    cfg.FloatOpt('initial_disk_allocation_ratio', default=1.0),
    cfg.IntOpt('reserved_host_cpus', default=0),
    cfg.IntOpt('reserved_host_memory_mb', default=512),
    cfg.IntOpt('reserved_host_disk_mb', default=0),
    cfg.IntOpt('shelved_offload_time', default=0),
    cfg.StrOpt('vcpu_pin_set'),
]
FILTER_SCHEDULER_OPTS = [
    cfg.MultiStrOpt('available_filters',
                    default=['nova.scheduler.filters.all_filters']),
    cfg.ListOpt('enabled_filters',
                default=['ComputeFilter', 'ComputeCapabilitiesFilter',
                         'ImagePropertiesFilter',
                         'ServerGroupAntiAffinityFilter',
                         'ServerGroupAffinityFilter']),
    cfg.ListOpt('weight_classes',
                default=['nova.scheduler.weights.all_weighers']),
    cfg.IntOpt('host_subset_size', default=1),
]
COMPUTE_OPTS = [
    cfg.StrOpt('provider_config_location',
               default='/etc/nova/provider_config/'),
    cfg.StrOpt('cpu_shared_set'),
    cfg.StrOpt('cpu_dedicated_set'),
]
LIBVIRT_OPTS = [
    cfg.StrOpt('images_type', default='default',
               choices=('raw', 'flat', 'qcow2', 'lvm', 'rbd', 'ploop',
                        'default')),
    cfg.StrOpt('images_volume_group'),
    cfg.StrOpt('images_rbd_pool', default='rbd'),
    cfg.StrOpt('images_rbd_ceph_conf', default=''),
    cfg.StrOpt('rbd_user'),
]
SCHEDULER_OPTS = [
    cfg.IntOpt('max_placement_results', default=1000),
]
OPTS = {None: DEFAULT_OPTS, 'filter_scheduler': FILTER_SCHEDULER_OPTS,
        'compute': COMPUTE_OPTS, 'scheduler': SCHEDULER_OPTS,
        'libvirt': LIBVIRT_OPTS}
# Not Nova's: placement.conf's, when the audit is given that file too.
PLACEMENT_OPTS = {'placement': [
    cfg.BoolOpt('randomize_allocation_candidates', default=False),
    cfg.IntOpt('max_allocation_candidates', default=-1)]}

# Nova's own service user (its auth_type alone tells whether it is set):
# shelve mode uses it when set, else the [opie] auth options.
SERVICE_USER_GROUP = 'service_user'
# The file of a --config-dir that ``opie-manage nova-conf`` writes.
OPIE_CONF_NAME = '50-opie.conf'

# OPIE's filter and weighers, as nova.conf names them.
FILTER_PATH = 'opie.nova.filters.PreemptibleFilter'
FILTER_NAME = FILTER_PATH.rpartition('.')[2]
WEIGHERS = ('opie.nova.weights.overcommit.OvercommitWeigher',
            'opie.nova.weights.preemption_cost.PreemptionCostWeigher')


def sources(paths, config_dir=None):
    """The files oslo.config reads, in its order (later ones win):
    ``paths``, then the ``*.conf`` of ``config_dir`` by name."""
    found = list(paths)
    if config_dir is not None:
        found += sorted(glob.glob(os.path.join(glob.escape(config_dir),
                                               '*.conf')))
    return found


def _check_readable(path):
    """Refuse what oslo.config would die on with a traceback: a directory,
    a file that is not UTF-8. A missing file is left to oslo.config, which
    names it."""
    try:
        inifile.read_text(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise errors.UsageError('cannot read %s: %s' % (
            path, exc.strerror or exc)) from None
    except inifile.IniError as exc:
        raise errors.UsageError('%s: %s' % (path, exc)) from None


def load(paths, config_dir=None, check_opie=True):
    """Parse the nova.conf files ``paths`` (in order, later ones win), then
    those of ``config_dir``, as ``--config-dir`` makes Nova do.

    Returns an oslo.config ``ConfigOpts``; every value has been read once,
    so a malformed file or value raises :class:`~errors.UsageError` here,
    naming it, and never later. Without ``check_opie`` the ``[opie]``
    values are left unread: the audit reports a bad one as a problem of
    the host (:func:`opie.nova.conf.load_settings`), not as bad input.
    """
    conf = cfg.ConfigOpts()
    for group, opts in dict(OPTS, **PLACEMENT_OPTS).items():
        conf.register_opts(opts, group=group)
    opie_conf.register_opts(conf)
    ks_loading.register_auth_conf_options(conf, SERVICE_USER_GROUP)
    if config_dir is not None and not os.path.isdir(config_dir):
        raise errors.UsageError('--config-dir %s: not a directory'
                                % config_dir)
    args = []
    for path in paths:
        args += ['--config-file', path]
    if config_dir is not None:
        args += ['--config-dir', config_dir]
    for path in sources(paths, config_dir):
        _check_readable(path)
    try:
        conf(args, project='nova', default_config_files=[],
             default_config_dirs=[], use_env=False)
    except cfg.Error as exc:
        raise errors.UsageError(' '.join(str(exc).split())) from None
    groups = dict(OPTS)
    if check_opie:
        groups[opie_conf.GROUP_NAME] = (opie_conf.opie_opts
                                        + opie_conf.terms_opts)
    for group, opts in groups.items():
        values = conf if group is None else conf[group]
        for opt in opts:
            try:
                getattr(values, opt.dest)
            except cfg.Error as exc:
                # oslo.config names the file by an internal location
                # object; keep only the reason.
                reason = str(exc).rpartition('is not valid: ')[2]
                raise errors.UsageError('%s: [%s] %s: %s' % (
                    where(conf), group or 'DEFAULT', opt.dest,
                    reason)) from None
    return conf


def conf_sources(conf):
    """The files a ``conf`` of :func:`load` was read from, in order."""
    # oslo.config keeps a list of the --config-dir given (one here).
    return sources(conf.config_file, (conf.config_dir or [None])[-1])


def where(conf):
    """The files ``conf`` was read from, to name in a message."""
    return ', '.join(conf_sources(conf))


def _checked(conf, option, minimum):
    """``[DEFAULT] option``, refused unless a finite number of at least
    ``minimum``: Nova would hand Placement a NaN, infinite or negative
    inventory."""
    value = getattr(conf, option)
    if value is not None and not (math.isfinite(value)
                                  and value >= minimum):
        raise errors.UsageError('%s: [DEFAULT] %s: %s is not a number >= '
                                '%g' % (where(conf), option, value,
                                        minimum))
    return value


def allocation_ratios(conf):
    """The ratios a new compute node's inventory gets, as Nova sets them:
    ``*_allocation_ratio`` if set (0 counts as unset), else the
    ``initial_*`` one."""
    return res.Resources(*(
        _checked(conf, '%s_allocation_ratio' % kind, 0)
        or _checked(conf, 'initial_%s_allocation_ratio' % kind, 0)
        for kind in ('cpu', 'ram', 'disk')))


def reserved(conf):
    """Reserved amounts as Nova reports them (disk rounded up to GB)."""
    return res.Resources(_checked(conf, 'reserved_host_cpus', 0),
                         _checked(conf, 'reserved_host_memory_mb', 0),
                         math.ceil(_checked(conf, 'reserved_host_disk_mb', 0)
                                   / 1024))


def shared_cpus(conf):
    """The CPUs this compute's Nova reports as VCPU (None: every online
    one), by :func:`opie.core.sizing.shared_cpus`; what nova-compute
    refuses is a ValueError."""
    return sizing.shared_cpus(conf.vcpu_pin_set, conf.compute.cpu_shared_set,
                              conf.compute.cpu_dedicated_set,
                              conf.reserved_host_cpus)
