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

"""``opie-manage audit --config-file``: what OPIE needs from nova.conf.

A scheduler host needs OPIE's filter and weighers enabled, usable
``[opie]`` options (oslo.config silently ignores a misspelt name and reads
an unescaped ``$`` as a reference to another option), and
``opie-scheduler`` running in place of ``nova-scheduler``, which only its
heartbeat file shows (the service record keeps Nova's name). A compute
host needs a provider config giving it ``CUSTOM_PREEMPTIBLE_*`` inventory
as Nova sizes the standard one (none of VCPU when every CPU is dedicated;
a VCPU total that nova.conf's CPU sets fix), CPU sets nova-compute starts
with, and, in shelve mode, to offload shelved instances at once. Each check
returns a list of :class:`~problems.Problem`.
"""
import difflib
import glob
import os
import re

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
import yaml

from opie.cmd import inifile
from opie.cmd import nova_conf
from opie.core import preemptible
from opie.core import problems
from opie.core import provider_config
from opie.nova import compat
from opie.nova import conf as opie_conf
from opie.nova.periodic import heartbeat

SCHEDULER = 'scheduler'
COMPUTE = 'compute'
RESTART = 'then restart opie-scheduler'


def check(conf, roles, now):
    """Problems of a parsed nova.conf for the given host roles."""
    found = []
    if SCHEDULER in roles:
        for scheduler_check in (_filter, _weighers, _multipliers,
                                _subset_size, _candidate_limit,
                                _candidate_cap):
            found += scheduler_check(conf)
        settings, problems_found = _opie_group(conf)
        found += problems_found + _opie_lines(conf)
        # The heartbeat's options may be the invalid ones.
        if settings is not None:
            found += _heartbeat(conf, settings, now)
        found += _nova_release()
    if COMPUTE in roles:
        found += _provider_config(conf) + _shelve_offload(conf)
    return found


def _nova_release():
    """The Nova of this Python environment (the scheduler's, when run
    with its Python) is one this OPIE runs on."""
    found = compat.release_problem()
    if found is None:
        return []
    return [problems.Problem(
        'Nova', found, 'install the OPIE release made for this Nova, or '
        'keep nova-scheduler until there is one (opie-scheduler refuses '
        'to start)')]


def _option(group, name):
    return 'nova.conf [%s] %s' % (group, name)


def _filter(conf):
    found = []
    available = conf.filter_scheduler.available_filters
    if nova_conf.FILTER_PATH not in available:
        found.append(problems.Problem(
            _option('filter_scheduler', 'available_filters'),
            '%s is not loaded (available_filters: %s)' % (
                nova_conf.FILTER_PATH, ', '.join(available) or 'none'),
            'add the line "available_filters = %s" to [filter_scheduler] '
            '(keep the existing lines), %s' % (nova_conf.FILTER_PATH,
                                               RESTART)))
    enabled = conf.filter_scheduler.enabled_filters
    if nova_conf.FILTER_NAME not in enabled:
        found.append(problems.Problem(
            _option('filter_scheduler', 'enabled_filters'),
            '%s is not enabled, so nothing checks that a host can make '
            'room: normal requests never preempt and preemptible ones '
            'overcommit hosts' % nova_conf.FILTER_NAME,
            'append %s to enabled_filters, %s' % (nova_conf.FILTER_NAME,
                                                  RESTART)))
    return found


def _weighers(conf):
    missing = [w for w in nova_conf.WEIGHERS
               if w not in conf.filter_scheduler.weight_classes]
    if not missing:
        return []
    return [problems.Problem(
        _option('filter_scheduler', 'weight_classes'),
        '%s missing, so hosts are not ranked by whether the request fits '
        'and by what preemption would cost' % ' and '.join(missing),
        'set weight_classes = %s, %s' % (
            ','.join(conf.filter_scheduler.weight_classes + missing),
            RESTART))]


def _opie_value(conf, name):
    """``[opie] name``, or None when invalid (:func:`_opie_group` names
    it)."""
    try:
        return conf.opie[name]
    except cfg.Error:
        return None


def _multipliers(conf):
    multiplier = _opie_value(conf, 'overcommit_weight_multiplier')
    if multiplier is None or multiplier > 0:
        return []
    return [problems.Problem(
        _option('opie', 'overcommit_weight_multiplier'),
        'is %g, so a host that needs preemption can win over a host with '
        'free room' % multiplier,
        'remove the option (default 1000) or make it larger than the sum '
        'of the other weighers\' multipliers, %s' % RESTART)]


def _subset_size(conf):
    size = conf.filter_scheduler.host_subset_size
    if size <= 1:
        return []
    return [problems.Problem(
        _option('filter_scheduler', 'host_subset_size'),
        'is %d: Nova picks at random among the %d best hosts, so it may '
        'preempt while a host with free room exists' % (size, size),
        'set host_subset_size = 1, %s' % RESTART)]


def _candidate_limit(conf):
    """An explicit candidate limit, without randomised candidates in the
    files given (placement.conf holds that option)."""
    limit = conf.scheduler.max_placement_results
    if (conf.placement.randomize_allocation_candidates
            or conf.get_location('max_placement_results', 'scheduler')
            .location == cfg.Locations.opt_default):
        return []
    return [problems.Problem(
        _option('scheduler', 'max_placement_results'),
        'is %d while [placement] randomize_allocation_candidates is not '
        'true: Placement returns the same first %d hosts to every request '
        'and may leave out free ones (when it cut its answer and none it '
        'returned fits, OPIE probes for room elsewhere and may ask again '
        'without the limit)'
        % (limit, limit),
        'set randomize_allocation_candidates = true in placement.conf '
        '(give it with --config-file to check), or remove the limit')]


def _candidate_cap(conf):
    """Placement's own cap on the candidates it makes for a request
    (placement.conf holds that option): it cuts every answer, asked with
    a limit or without, so neither an answer within Nova's limit nor
    OPIE's query without the limit shows every host."""
    cap = conf.placement.max_allocation_candidates
    if cap < 0:
        return []
    return [problems.Problem(
        'placement.conf [placement] max_allocation_candidates',
        'is %d: Placement makes at most %d candidates for a request, with '
        'or without a limit, so OPIE may see none of the hosts with free '
        'room and preempt while one is free' % (cap, cap),
        'set it to -1 (the default), or above the number of candidates '
        'all compute nodes give one request, then restart placement')]


def _opie_group(conf):
    """The ``[opie]`` settings (None if invalid) and their problems."""
    try:
        settings = opie_conf.load_settings(conf)
    except opie_conf.ConfigError as exc:
        return None, [problems.Problem('nova.conf [opie]', str(exc),
                                       'correct the value, %s' % RESTART)]
    # OPIE shelves with Nova's own service user if set, else its own.
    if (settings.termination_mode == opie_conf.SHELVE
            and not conf.opie.auth_type
            and not conf[nova_conf.SERVICE_USER_GROUP].auth_type):
        return settings, [problems.Problem(
            _option('opie', 'auth_type'),
            'termination_mode = shelve needs service user credentials '
            '(shelving snapshots to Glance), but none are set',
            'set Nova\'s [service_user] or, in [opie], auth_type = '
            'password, auth_url, username, password, project_name and the '
            'domains of a service user, %s' % RESTART)]
    return settings, []


def _opie_options(conf):
    """The options [opie] may hold: OPIE's, keystoneauth's session and
    auth options and those of its auth plugin (password's if unknown)."""
    try:
        plugin = ks_loading.get_auth_plugin_conf_options(
            conf.opie.auth_type or 'password')
    except ks_exceptions.NoMatchingPlugin:
        # A plugin not installed here: the options of the usual one.
        plugin = ks_loading.get_auth_plugin_conf_options('password')
    return (opie_conf.list_opts()[0][1] + ks_loading.get_session_conf_options()
            + plugin)


# A "$" oslo.config interpolates: not one of a "$$", which reads as "$".
UNESCAPED = re.compile(r'\$\$|\$\{?(\w*)')


def _opie_lines(conf):
    """What oslo.config silently gets wrong in the lines of [opie]: an
    option name OPIE does not know (a typo leaves the default in force),
    a "$" not escaped as "$$" (read as a reference to another option)."""
    opts = _opie_options(conf)
    names = {name for opt in opts
             for name in [opt.dest] + [d.name for d in opt.deprecated_opts]}
    secret = {opt.dest for opt in opts if opt.secret}
    found = []
    for path in nova_conf.conf_sources(conf):
        try:
            lines = inifile.read(path).options(opie_conf.GROUP_NAME)
        except (OSError, inifile.IniError):
            # Read by oslo.config already: its own check names the file.
            continue
        for option, value in lines:
            subject = _option('opie', option)
            if option not in names:
                close = difflib.get_close_matches(option, names, n=1)
                found.append(problems.Problem(
                    subject, 'is not an option of [opie]: OPIE ignores it '
                    '(%s)' % path,
                    ('rename it %s' % close[0] if close else 'remove it')
                    + ', %s' % RESTART))
            # A reference to a known option is meant (heartbeat_path =
            # $state_path/...), unless in a secret, which is never one.
            references = [m.group(1) for m in UNESCAPED.finditer(value)
                          if m.group() != '$$' and (
                              option in secret or m.group(1) not in conf)]
            if references:
                found.append(problems.Problem(
                    subject, 'has an unescaped "$" (%s): oslo.config %s' % (
                        path,
                        'reads it as a reference to another option'
                        if option in secret else 'reads "$%s" as a '
                        'reference to option %s' % ((references[0],) * 2)),
                    'write each "$" of the value as "$$", %s' % RESTART))
    return found


def _heartbeat(conf, settings, now):
    path, interval = conf.opie.heartbeat_path, conf.opie.heartbeat_interval
    subject = 'opie-scheduler on this host'
    beat = heartbeat.read(path)
    if beat is None:
        return [problems.Problem(
            subject,
            'no heartbeat in %s: the OPIE scheduler manager is not running, '
            'so no request preempts anything' % path,
            'run opie-scheduler instead of nova-scheduler, with the same '
            'arguments (or audit with --role compute on hosts without a '
            'scheduler)')]
    age = heartbeat.age(beat, now)
    if age is None:
        return [problems.Problem(
            subject, 'heartbeat %s has no valid "time"' % path,
            'restart opie-scheduler; if it persists, it is not the '
            'version this opie-manage expects')]
    if age >= heartbeat.ALIVE_INTERVALS * interval:
        return [problems.Problem(
            subject,
            'last heartbeat in %s is %d s old (interval %d s): '
            'opie-scheduler stopped or hangs' % (path, age, interval),
            'look at the opie-scheduler log and restart it')]
    if beat.get('safe_mode'):
        return [problems.Problem(
            subject,
            'opie-scheduler runs in SAFE MODE (%s): nothing is preempted'
            % beat['safe_mode'],
            'install the OPIE release made for the installed Nova, then '
            'restart opie-scheduler')]
    return _running_settings(settings, beat.get('settings') or {}, path)


def _running_settings(settings, running, path):
    """What the running scheduler uses against what nova.conf says
    (nothing to compare when nova.conf's own [opie] is invalid)."""
    if settings is None:
        return []
    found = []
    for name, configured in (('termination_mode', settings.termination_mode),
                             ('costs', str(settings.cost_model))):
        if name in running and running[name] != configured:
            found.append(problems.Problem(
                'opie-scheduler on this host',
                'runs with %s = %s (heartbeat %s) but nova.conf says %s' % (
                    name, running[name], path, configured),
                'restart opie-scheduler to apply nova.conf'))
    return found


def _provider_config(conf):
    directory = conf.compute.provider_config_location
    subject = 'provider config %s' % directory
    fix = ('opie-manage provider-config %s --output %s, then restart '
           'nova-compute' % (
               ' '.join('--config-file %s' % p for p in conf.config_file),
               os.path.join(directory, 'opie.yaml')))
    found, inventories = [], {}
    for path in sorted(glob.glob(os.path.join(directory, '*.yaml'))):
        try:
            with open(path, encoding='utf-8') as f:
                document = yaml.safe_load(f)
        except (OSError, yaml.YAMLError) as exc:
            found.append(problems.Problem(
                'provider config %s' % path,
                'cannot be read (%s): nova-compute will not start' % (
                    ' '.join(str(exc).split())),
                'fix or remove the file, or regenerate it: ' + fix))
            continue
        inventories.update(provider_config.custom_inventories(document))
    try:
        shared = nova_conf.shared_cpus(conf)
    except ValueError as exc:
        found.append(problems.Problem(
            'nova.conf [compute] CPU sets', str(exc),
            'correct nova.conf, restart nova-compute, then: ' + fix))
        shared = None
    vcpu = preemptible.CUSTOM.vcpus
    # Every CPU dedicated: Nova reports no VCPU, so no preemptible one.
    no_vcpu = shared == set()
    if no_vcpu and vcpu in inventories:
        found.append(problems.Problem(
            subject, 'gives %s but every CPU is in [compute] '
            'cpu_dedicated_set: Nova reports no VCPU, and preemptible '
            'servers never run on dedicated CPUs' % vcpu, fix))
    missing = [name for name in preemptible.PROVIDER_CONFIG_CLASSES
               if name not in inventories
               and not (no_vcpu and name == vcpu)]
    if set(missing) - {preemptible.HOST_TOKEN}:
        found.append(problems.Problem(
            subject,
            'gives no inventory of %s, so preemptible servers cannot be '
            'placed on this compute' % ', '.join(missing), fix))
    elif (inventories.get(preemptible.HOST_TOKEN)
          != preemptible.HOST_TOKEN_INVENTORY):
        found.append(problems.Problem(
            subject, TOKEN_PROBLEM % (
                'gives no' if missing else 'gives a wrong',
                preemptible.HOST_TOKEN),
            fix))
    return found + _stale_inventory(conf, shared, inventories, subject, fix)


# Also the cloud audit's words.
TOKEN_PROBLEM = ('%s inventory of %s (one unit, the host token), so '
                 'opie-scheduler places no server on this compute')


def _stale_inventory(conf, shared, inventories, subject, fix):
    """Reserved amounts, explicit ratios and a VCPU total that nova.conf
    fixes (a set of ``shared`` CPUs) against those the provider config
    copied when it was written."""
    found = []
    ratios = nova_conf.allocation_ratios(conf)
    for name, kind, ratio, held in zip(preemptible.CUSTOM,
                                       ('cpu', 'ram', 'disk'), ratios,
                                       nova_conf.reserved(conf)):
        inventory = inventories.get(name)
        if not isinstance(inventory, dict):
            continue
        wanted = {'reserved': held}
        if kind == 'cpu' and shared:
            wanted['total'] = len(shared)
        # A ratio left unset in nova.conf may be managed in Placement.
        if getattr(conf, '%s_allocation_ratio' % kind):
            wanted['allocation_ratio'] = ratio
        for field, value in wanted.items():
            written = inventory.get(
                field, provider_config.INVENTORY_DEFAULTS.get(field))
            if written != value:
                found.append(problems.Problem(
                    subject,
                    '%s has %s %s but nova.conf gives the standard class %s'
                    % (name, field, written, value), fix))
    return found


def _shelve_offload(conf):
    if (_opie_value(conf, 'termination_mode') != opie_conf.SHELVE
            or conf.shelved_offload_time == 0):
        return []
    return [problems.Problem(
        _option('DEFAULT', 'shelved_offload_time'),
        'is %d while [opie] termination_mode = shelve: a shelved victim '
        'keeps its room on the host %s, so the request that preempted it '
        'does not fit' % (conf.shelved_offload_time,
                          'forever' if conf.shelved_offload_time < 0
                          else 'for %d s' % conf.shelved_offload_time),
        'set shelved_offload_time = 0 on every compute, then restart '
        'nova-compute')]
