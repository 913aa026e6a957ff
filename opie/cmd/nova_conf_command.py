"""``opie-manage nova-conf``: write OPIE's settings into a nova.conf.

One implementation for whoever sets up OPIE (the DevStack plugin, the lab,
an operator): it edits one nova.conf in place, creating it if missing,
changes only the options below, keeps every other line (see
:mod:`.inifile`) and leaves a file it already set up as it is::

    opie-manage nova-conf scheduler --config-file /etc/nova/nova.conf \\
        --costs period --billing-period 3600 --termination-mode delete
    opie-manage nova-conf compute --config-file /etc/nova/nova-cpu.conf \\
        --provider-config-dir /etc/nova/provider_config

``scheduler`` loads and enables OPIE's filter and adds its weighers to
``weight_classes``, keeping the filters and weighers already there (Nova's
defaults if unset), and sets the ``[opie]`` options given; shelve mode
also needs the service user that snapshots victims to Glance. ``compute``
sets ``[compute] provider_config_location``, the directory where
``opie-manage provider-config`` writes the provider config, and, in
shelve mode, ``[DEFAULT] shelved_offload_time = 0``, so that a shelved
victim frees its room at once. Values are checked against the option
declarations before the file is touched. Restart the service to apply.
"""
from opie.cmd import errors
from opie.cmd import files
from opie.cmd import inifile
from opie.cmd import nova_conf
from opie.core import costs
from opie.nova import conf as opie_conf

FILTER_SCHEDULER = 'filter_scheduler'
OPIE = opie_conf.GROUP_NAME
# What OPIE adds to each [filter_scheduler] option.
OPIE_CLASSES = {'available_filters': [nova_conf.FILTER_PATH],
                'enabled_filters': [nova_conf.FILTER_NAME],
                'weight_classes': list(nova_conf.WEIGHERS)}
# Declarations of the options set, for their checks and defaults.
FILTER_SCHEDULER_OPTS = {opt.dest: opt
                         for opt in nova_conf.FILTER_SCHEDULER_OPTS}
OPIE_OPTS = {opt.dest: opt for opt in opie_conf.opie_opts}
# The [opie] options ``scheduler`` sets, with the help of their flags.
SCHEDULER_OPTIONS = {
    'costs': ('SPEC', 'cost plugins with multipliers, e.g. "period" or '
              '"period=1,count=60"'),
    'billing_period': ('SECONDS', 'billing period of the period cost'),
    'max_victims': ('N', 'most instances one request may preempt, 0 for '
                    'no limit'),
    'termination_mode': (
        '{%s}' % ','.join(OPIE_OPTS['termination_mode'].type.choices),
        'what happens to a victim'),
}
# The service user of shelve mode: the [opie] options of keystone's
# password plugin, with the metavar and help of their flags.
SERVICE_USER = {'auth_url': ('URL', "Keystone's URL"),
                'username': ('NAME', 'the service user, e.g. nova'),
                'password': ('PASSWORD', 'its password'),
                'project_name': ('NAME', 'its project, e.g. service')}
DEFAULT_DOMAIN = 'Default'


def _flag(option):
    return '--' + option.replace('_', '-')


def register(subparsers):
    parser = subparsers.add_parser(
        'nova-conf', help="write OPIE's settings into a nova.conf",
        description="Write OPIE's settings into a scheduler's or a "
        "compute's nova.conf, keeping every other line; running it again "
        'changes nothing. Restart the service to apply.')
    roles = parser.add_subparsers(dest='role', required=True,
                                  metavar='ROLE')

    scheduler = roles.add_parser(
        'scheduler', help="OPIE's filter, weighers and [opie] options",
        description='Load and enable %s and add OPIE\'s weighers to '
        '[filter_scheduler] (keeping the filters and weighers there, '
        'Nova\'s defaults if unset); set the [opie] options given. Shelve '
        'mode also needs the service user that snapshots victims.'
        % nova_conf.FILTER_PATH)
    _add_config_file(scheduler)
    group = scheduler.add_argument_group(
        '[opie] options', 'only those given are written')
    for option, (metavar, text) in SCHEDULER_OPTIONS.items():
        group.add_argument(_flag(option), dest=option, metavar=metavar,
                           help="%s (OPIE's default: %s)" % (
                               text, OPIE_OPTS[option].default))
    service = scheduler.add_argument_group(
        'service user', 'required with --termination-mode shelve, refused '
        'without it')
    for option, (metavar, text) in SERVICE_USER.items():
        service.add_argument(_flag(option), dest=option, metavar=metavar,
                             help=text)
    service.add_argument('--domain-name', metavar='NAME',
                         help='domain of the user and of its project '
                         '(default: %s)' % DEFAULT_DOMAIN)
    scheduler.set_defaults(func=scheduler_command)

    compute = roles.add_parser(
        'compute', help='where the provider config is, shelve offload',
        description='Set [compute] provider_config_location to the '
        'directory of the provider config (write it with opie-manage '
        'provider-config) and, with --termination-mode shelve, [DEFAULT] '
        'shelved_offload_time = 0.')
    _add_config_file(compute)
    compute.add_argument('--provider-config-dir', required=True,
                         metavar='DIR',
                         help='[compute] provider_config_location')
    compute.add_argument('--termination-mode', dest='termination_mode',
                         metavar=SCHEDULER_OPTIONS['termination_mode'][0],
                         help="the scheduler's [opie] termination_mode")
    compute.set_defaults(func=compute_command)


def _add_config_file(parser):
    parser.add_argument('--config-file', required=True, metavar='PATH',
                        help='the nova.conf to edit (created if missing)')


def _checked(option, text):
    """``text`` if the declaration of ``[opie] option`` accepts it."""
    try:
        OPIE_OPTS[option].type(text)
    except ValueError as exc:
        raise errors.UsageError('%s %s: %s' % (_flag(option), text,
                                               exc)) from None
    return text


def _opie_settings(args):
    """The ``[opie]`` options given, checked: {option: value}."""
    given = {option: _checked(option, getattr(args, option))
             for option in SCHEDULER_OPTIONS
             if getattr(args, option) is not None}
    if 'costs' in given:
        try:
            costs.load_cost_model(given['costs'])
        except ValueError as exc:
            raise errors.UsageError('--costs %s: %s' % (
                given['costs'], exc)) from None
    given.update(_service_user(args))
    return given


def _service_user(args):
    """The service user's ``[opie]`` options, required in shelve mode."""
    given = {option: getattr(args, option) for option in SERVICE_USER}
    if args.termination_mode != opie_conf.SHELVE:
        if args.domain_name is not None or any(
                value is not None for value in given.values()):
            raise errors.UsageError(
                '%s and --domain-name go with --termination-mode shelve'
                % ', '.join(map(_flag, given)))
        return {}
    missing = [_flag(option) for option, value in given.items() if not value]
    if missing:
        raise errors.UsageError(
            '--termination-mode shelve needs the service user that '
            'snapshots victims to Glance: give %s' % ', '.join(missing))
    domain = DEFAULT_DOMAIN if args.domain_name is None else args.domain_name
    return dict(auth_type='password', **given, user_domain_name=domain,
                project_domain_name=domain)


def _with_opie_classes(ini, option):
    """The values of ``[filter_scheduler] option`` with OPIE's classes
    appended, as one value per line; None if none is missing."""
    opt = FILTER_SCHEDULER_OPTS[option]
    lines = ini.get(FILTER_SCHEDULER, option)
    if opt.multi:
        current = lines or list(opt.default)
    else:
        # Nova uses the last line of a single-valued option, split as its
        # declaration says.
        current = opt.type(lines[-1]) if lines else list(opt.default)
    missing = [name for name in OPIE_CLASSES[option] if name not in current]
    if not missing:
        return None
    values = current + missing
    return values if opt.multi else [','.join(values)]


def _read(path):
    try:
        return inifile.read(path)
    except OSError as exc:
        raise errors.UsageError('cannot read %s: %s' % (
            path, exc.strerror or exc)) from None
    except inifile.IniError as exc:
        raise errors.UsageError('%s: %s' % (path, exc)) from None


def _apply(path, ini, settings):
    """Set each (section, option, values) of ``settings`` in ``ini``, then
    write it to ``path`` if anything changed: all or nothing."""
    changed = []
    for section, option, values in settings:
        try:
            if ini.set(section, option, values):
                changed.append('[%s] %s' % (section, option))
        except inifile.IniError as exc:
            raise errors.UsageError('%s: %s' % (path, exc)) from None
    if changed:
        files.write(path, ini.text)
        print('%s: set %s' % (path, ', '.join(changed)))
    else:
        print('%s: nothing to change' % path)
    return 0


def scheduler_command(args):
    opie = _opie_settings(args)
    ini = _read(args.config_file)
    settings = []
    for option in OPIE_CLASSES:
        values = _with_opie_classes(ini, option)
        if values is not None:
            settings.append((FILTER_SCHEDULER, option, values))
    settings += [(OPIE, option, [value]) for option, value in opie.items()]
    return _apply(args.config_file, ini, settings)


def compute_command(args):
    settings = [('compute', 'provider_config_location',
                 [args.provider_config_dir])]
    if (args.termination_mode is not None
            and _checked('termination_mode',
                         args.termination_mode) == opie_conf.SHELVE):
        settings.append((inifile.DEFAULT, 'shelved_offload_time', ['0']))
    return _apply(args.config_file, _read(args.config_file), settings)
