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
also needs the service user that snapshots victims to Glance: Nova's own
``[service_user]`` if set, else one given, whose password is read from a
file (an argument would show in the process list). ``scheduler --remove``
undoes it all, giving back the file as it was where it can. ``compute``
sets ``[compute] provider_config_location``, the directory where
``opie-manage provider-config`` writes the provider config, and, in
shelve mode, ``[DEFAULT] shelved_offload_time = 0``, so that a shelved
victim frees its room at once; ``compute --remove`` with the same
options removes them where they still have those values. Values are
checked against the option declarations before the file is touched.
With ``--config-dir``, the values in force are read from the config file
and the directory, as Nova reads them, and the changes go to OPIE's own
file in the directory. Restart the service to apply.
"""
import os
import stat
import sys

from opie.cmd import errors
from opie.cmd import files as files_mod
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
OPIE_OPTS = {opt.dest: opt
             for opt in opie_conf.opie_opts + opie_conf.terms_opts}
# The [opie] options ``scheduler`` sets, with the help of their flags.
SCHEDULER_OPTIONS = {
    'costs': ('SPEC', 'cost plugins with multipliers, e.g. "period" or '
              '"period=1,count=60"'),
    'billing_period': ('SECONDS', 'billing period of the period cost'),
    'max_victims': ('N', 'most instances one request may preempt, 0 for '
                    'no limit'),
    'minimum_uptime': ('SECONDS', 'how long a preemptible runs before it '
                       'may be a victim, where its flavor sets no '
                       'opie:minimum_uptime'),
    'termination_mode': (
        '{%s}' % ','.join(OPIE_OPTS['termination_mode'].type.choices),
        'what happens to a victim'),
}
# The service user of shelve mode when nova.conf has no [service_user]:
# the [opie] options of keystone's password plugin, with the flag, metavar
# and help of each. The password is read from a file, never taken as an
# argument: the host's process list would show it.
SERVICE_USER = {
    'auth_url': ('--auth-url', 'URL', "Keystone's URL"),
    'username': ('--username', 'NAME', 'the service user, e.g. nova'),
    'password': ('--password-file', 'PATH', 'file whose first line is its '
                 'password, "-" for standard input'),
    'project_name': ('--project-name', 'NAME', 'its project, e.g. service')}
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

    # No abbreviations: --password would be taken for --password-file.
    scheduler = roles.add_parser(
        'scheduler', allow_abbrev=False,
        help="OPIE's filter, weighers and [opie] options",
        description='Load and enable %s and add OPIE\'s weighers to '
        '[filter_scheduler] (keeping the filters and weighers there, '
        'Nova\'s defaults if unset); set the [opie] options given. Shelve '
        'mode also needs a service user that snapshots victims: Nova\'s '
        '[service_user] if set, else the one given here. --remove undoes '
        'it all.' % nova_conf.FILTER_PATH)
    _add_config_file(scheduler)
    scheduler.add_argument(
        '--remove', action='store_true',
        help="remove OPIE's filter and weighers and the [opie] group, "
        "giving back Nova's stock scheduling (see the rollback procedure "
        'first)')
    group = scheduler.add_argument_group(
        '[opie] options', 'only those given are written')
    for option, (metavar, text) in SCHEDULER_OPTIONS.items():
        group.add_argument(_flag(option), dest=option, metavar=metavar,
                           help="%s (OPIE's default: %s)" % (
                               text, OPIE_OPTS[option].default))
    service = scheduler.add_argument_group(
        'service user', 'required with --termination-mode shelve unless '
        'nova.conf has a [service_user] with an auth_type; refused '
        'without shelve mode')
    for option, (flag, metavar, text) in SERVICE_USER.items():
        service.add_argument(flag, dest=option, metavar=metavar, help=text)
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
    compute.add_argument(
        '--remove', action='store_true',
        help='undo the same command without --remove: remove the options '
        'it set, where they still have the values it set')
    compute.set_defaults(func=compute_command)


def _add_config_file(parser):
    parser.add_argument('--config-file', required=True, metavar='PATH',
                        help='the nova.conf to edit (created if missing)')
    parser.add_argument('--config-dir', metavar='DIR',
                        help="the service's --config-dir (nova.conf.d): "
                        'its files are read after --config-file, and the '
                        'changes go to its file %s' % nova_conf.OPIE_CONF_NAME)


def _checked(option, text):
    """``text`` if the declaration of ``[opie] option`` accepts it."""
    try:
        OPIE_OPTS[option].type(text)
    except ValueError as exc:
        raise errors.UsageError('%s %s: %s' % (_flag(option), text,
                                               exc)) from None
    return text


class _Files:
    """The files Nova reads (``--config-file``, then the ``*.conf`` of
    ``--config-dir``), and the one to edit among them: the config file, or
    OPIE's own file in the directory."""

    def __init__(self, args):
        if args.config_dir is None:
            self.target = args.config_file
        else:
            if not os.path.isdir(args.config_dir):
                raise errors.UsageError('--config-dir %s: not a directory'
                                        % args.config_dir)
            self.target = os.path.join(args.config_dir,
                                       nova_conf.OPIE_CONF_NAME)
        paths = nova_conf.sources([args.config_file], args.config_dir)
        if self.target not in paths:
            paths.append(self.target)
        # Sorted by name, so where a new file of OPIE's goes.
        if args.config_dir is not None:
            paths[1:] = sorted(paths[1:])
        self.inis = [(path, _read(path)) for path in paths]
        self.ini = dict(self.inis)[self.target]
        index = paths.index(self.target)
        self.before, self.after = self.inis[:index], self.inis[index + 1:]

    def values(self, section, option, inis):
        """The raw values of ``option`` as Nova merges ``inis``: the lines
        of all of them for a multi-valued option, else the last one's
        (None if none sets it)."""
        opt = FILTER_SCHEDULER_OPTS.get(option)
        found = [ini.get(section, option) for _, ini in inis]
        found = [lines for lines in found if lines]
        if not found:
            return None
        if opt is not None and opt.multi:
            return [line for lines in found for line in lines]
        return found[-1][-1:]

    def service_user(self):
        """Whether Nova's [service_user] is set (it has an auth_type)."""
        return bool(self.values(nova_conf.SERVICE_USER_GROUP, 'auth_type',
                                self.inis))

    def check_not_overridden(self, settings):
        """Refuse settings a file read after the target would hide."""
        for section, option, _ in settings:
            opt = FILTER_SCHEDULER_OPTS.get(option)
            if opt is not None and opt.multi:
                continue
            for path, ini in self.after:
                if ini.get(section, option):
                    raise errors.UsageError(
                        '%s sets [%s] %s after %s, so Nova would not use '
                        "OPIE's value: remove it there" % (
                            path, section, option, self.target))


def _opie_settings(args, service_user_set):
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
    given.update(_service_user(args, service_user_set))
    return given


def _read_password(path):
    """The first line of the file ``path`` (``-``: standard input)."""
    flag = SERVICE_USER['password'][0]
    try:
        if path == '-':
            line = sys.stdin.readline()
        else:
            with open(path, encoding='utf-8') as f:
                line = f.readline()
    except OSError as exc:
        raise errors.UsageError('%s %s: %s' % (
            flag, path, exc.strerror or exc)) from None
    except UnicodeDecodeError:
        raise errors.UsageError('%s %s: not UTF-8 text' % (flag,
                                                           path)) from None
    password = line.rstrip('\r\n')
    if not password:
        raise errors.UsageError('%s %s: no password on its first line'
                                % (flag, path))
    return password


def _service_user(args, service_user_set):
    """The service user's ``[opie]`` options: required in shelve mode
    unless Nova's own [service_user] is set."""
    given = {option: getattr(args, option) for option in SERVICE_USER}
    flags = [SERVICE_USER[option][0] for option in SERVICE_USER]
    if args.termination_mode != opie_conf.SHELVE:
        if args.domain_name is not None or any(
                value is not None for value in given.values()):
            raise errors.UsageError(
                '%s and --domain-name go with --termination-mode shelve'
                % ', '.join(flags))
        return {}
    if service_user_set and not any(given.values()):
        return {}
    missing = [SERVICE_USER[option][0] for option, value in given.items()
               if not value]
    if missing:
        raise errors.UsageError(
            '--termination-mode shelve needs the service user that '
            'snapshots victims to Glance: set [service_user] in nova.conf '
            'or give %s' % ', '.join(missing))
    given['password'] = _read_password(given['password'])
    domain = DEFAULT_DOMAIN if args.domain_name is None else args.domain_name
    return dict(auth_type='password', **given, user_domain_name=domain,
                project_domain_name=domain)


def _current(files, option):
    """The classes of ``[filter_scheduler] option`` that Nova uses."""
    opt = FILTER_SCHEDULER_OPTS[option]
    lines = files.values(FILTER_SCHEDULER, option, files.inis)
    if lines is None:
        return list(opt.default)
    return lines if opt.multi else opt.type(lines[-1])


def _with_opie_classes(files, option):
    """The lines of ``[filter_scheduler] option`` that the target file
    needs so that Nova's value has OPIE's classes; None if none is
    missing."""
    opt = FILTER_SCHEDULER_OPTS[option]
    current = _current(files, option)
    missing = [name for name in OPIE_CLASSES[option] if name not in current]
    if not missing:
        return None
    if not opt.multi:
        return [','.join(current + missing)]
    # The lines of a multi-valued option add up over the files: the
    # target's own, or Nova's default if no file has any.
    own = files.ini.get(FILTER_SCHEDULER, option)
    if files.values(FILTER_SCHEDULER, option, files.inis) is None:
        own = list(opt.default)
    return own + missing


def _without_opie_classes(files, option):
    """The lines of ``[filter_scheduler] option`` in the target file once
    OPIE's classes are removed; None if it has none of them.

    No line at all when what is left is what Nova would use without the
    line (the other files' value, or its default), as before OPIE.
    """
    opt = FILTER_SCHEDULER_OPTS[option]
    lines = files.ini.get(FILTER_SCHEDULER, option)
    if not lines:
        return None
    ours = OPIE_CLASSES[option]
    if opt.multi:
        left = [line for line in lines if line not in ours]
        if left == lines:
            return None
        others = files.values(FILTER_SCHEDULER, option, files.before)
        if others is None and left == list(opt.default):
            # Nova's default, which the lines were added to.
            return []
        return left
    classes = opt.type(lines[-1])
    left = [name for name in classes if name not in ours]
    if left == classes:
        return None
    others = files.values(FILTER_SCHEDULER, option, files.before)
    stock = opt.type(others[-1]) if others else list(opt.default)
    return [] if left == stock else [','.join(left)]


def _read(path):
    try:
        return inifile.read(path)
    except OSError as exc:
        raise errors.UsageError('cannot read %s: %s' % (
            path, exc.strerror or exc)) from None
    except inifile.IniError as exc:
        raise errors.UsageError('%s: %s' % (path, exc)) from None


def _write(files, done, verb, nothing):
    """Write the target file if anything was ``done``, and say so."""
    path = files.target
    if done:
        # A password in it: created readable by its owner only. An existing
        # file keeps its mode (Nova must still read it), and is named if
        # every user can read the password.
        secret = bool(files.ini.get(OPIE, 'password'))
        files_mod.write(path, files.ini.text, secret=secret)
        print('%s: %s %s' % (path, verb, ', '.join(done)))
        if secret and os.stat(path).st_mode & stat.S_IROTH:
            print('warning: %s holds [%s] password and every user can read '
                  'it: make it readable by Nova only (chmod o-r)'
                  % (path, OPIE), file=sys.stderr)
    else:
        print('%s: nothing to %s' % (path, nothing))
    return 0


def _apply(files, settings):
    """Set each (section, option, values) of ``settings`` in the target
    file, then write it if anything changed: all or nothing. Values of
    [filter_scheduler] are raw, as read from the files."""
    files.check_not_overridden(settings)
    changed = []
    for section, option, values in settings:
        try:
            if files.ini.set(section, option, values,
                             raw=section == FILTER_SCHEDULER):
                changed.append('[%s] %s' % (section, option))
        except inifile.IniError as exc:
            raise errors.UsageError('%s: %s' % (files.target, exc)) from None
    return _write(files, changed, 'set', 'change')


def remove_scheduler(args, dry_run=False):
    """Undo ``scheduler`` in the files of ``args`` (``config_file``,
    ``config_dir``), as ``scheduler --remove`` does; ``opie-manage
    rollback`` calls it too. With ``dry_run``, only say what would go."""
    files = _Files(args)
    if not dry_run:
        return _remove(files)
    print('%s: would remove %s' % (
        files.target, ', '.join(_removed(files)) or 'nothing'))
    return 0


def _remove(files):
    """Undo ``scheduler``: OPIE's classes and the [opie] group out of the
    target file; OPIE's own file of a --config-dir goes if left empty."""
    return _write_removed(files, _removed(files))


def _removed(files):
    """Take OPIE's classes and the [opie] group out of the target file (in
    memory): what was removed."""
    removed = []
    for option in OPIE_CLASSES:
        values = _without_opie_classes(files, option)
        if values is not None:
            files.ini.set(FILTER_SCHEDULER, option, values, raw=True)
            removed.append('[%s] %s' % (FILTER_SCHEDULER, option))
    if files.ini.remove_section(OPIE):
        removed.append('[%s]' % OPIE)
    return removed


def _write_removed(files, removed):
    """Write what ``removed`` left of the target file; OPIE's own file of
    a --config-dir goes if left empty."""
    if (removed and files.target != files.inis[0][0]
            and not files.ini.text.strip()):
        try:
            os.unlink(files.target)
        except OSError as exc:
            raise errors.UsageError('cannot remove %s: %s' % (
                files.target, exc.strerror or exc)) from None
        print('%s: removed' % files.target)
        return 0
    return _write(files, removed, 'removed', 'remove')


def scheduler_command(args):
    files = _Files(args)
    if args.remove:
        given = [_flag(option) for option in SCHEDULER_OPTIONS
                 if getattr(args, option) is not None]
        given += [flag for option, (flag, _, _) in SERVICE_USER.items()
                  if getattr(args, option) is not None]
        if given or args.domain_name is not None:
            raise errors.UsageError('--remove takes no [opie] option or '
                                    'service user: %s' % ', '.join(
                                        given or ['--domain-name']))
        return _remove(files)
    opie = _opie_settings(args, files.service_user())
    settings = []
    for option in OPIE_CLASSES:
        values = _with_opie_classes(files, option)
        if values is not None:
            settings.append((FILTER_SCHEDULER, option, values))
    settings += [(OPIE, option, [value]) for option, value in opie.items()]
    return _apply(files, settings)


def compute_command(args):
    settings = [('compute', 'provider_config_location',
                 [args.provider_config_dir])]
    if (args.termination_mode is not None
            and _checked('termination_mode',
                         args.termination_mode) == opie_conf.SHELVE):
        settings.append((inifile.DEFAULT, 'shelved_offload_time', ['0']))
    if args.remove:
        return _remove_settings(_Files(args), settings)
    return _apply(_Files(args), settings)


def _remove_settings(files, settings):
    """Remove each (section, option, values) of ``settings`` from the
    target file where it has those values; all or nothing: an option set
    to anything else is the operator's, and nothing is written."""
    removed = []
    for section, option, values in settings:
        found = files.ini.get(section, option)
        if not found:
            continue
        if found != [inifile.escape(value) for value in values]:
            raise errors.UsageError(
                '%s: [%s] %s = %s is not what OPIE set (%s); nothing '
                'removed' % (files.target, section, option,
                             ','.join(found), ','.join(values)))
        files.ini.set(section, option, [])
        removed.append('[%s] %s' % (section, option))
    return _write_removed(files, removed)
