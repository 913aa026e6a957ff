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

"""``opie-manage history``: why each preemption happened.

Every preemption's explanation (:mod:`opie.core.explain`) is kept in
Nova's database, on an event of each victim's ``opie-preempt`` instance
action (:mod:`opie.nova.request.terminate`); this reads them back from every
cell (:mod:`opie.nova.request.history`) with the database settings of a
controller's nova.conf, as ``nova-manage`` does::

    opie-manage history --config-file /etc/nova/nova.conf \\
        [--project P] [--requester-project P] [--host H] \\
        [--since 2026-11-26T00:00Z] [--until ...] [-f json]

The victims of one preemption (one request's instance on one host, or one
repair of the reconciler) each hold the same explanation; they are shown
as one entry, oldest first: when, where, for which request, why that
host, each victim with its owner and cost, the next best hosts and why
each lost, and how many hosts refused the request for each reason.
``--project`` keeps the preemptions that took a server of that project,
``--requester-project`` those made for a request of that project; both
together keep those that did both. ``--since`` and ``--until`` take ISO
8601 times (UTC when no zone is given) and bound when the victims were
terminated (``--until`` excluded). Preemptions recorded before OPIE kept
explanations have no event and are not listed (their actions remain).

Exit codes: 0 (even when nothing matches), 2 bad input (one line).
"""
import json
import warnings

from opie import arguments
from opie import oneline
from opie.cmd import errors
from opie.cmd import options

TABLE, JSON = 'table', 'json'


def register(subparsers):
    parser = subparsers.add_parser(
        'history', help='why each preemption happened (from Nova\'s '
        'database)',
        description='Print every preemption OPIE kept an explanation of in '
        'Nova\'s database: the request, the host chosen and why, each '
        'victim with its cost, the next best hosts and why they lost. '
        'Needs a nova.conf with Nova\'s [api_database] connection (a '
        'controller\'s). Exit codes: 0, 2 bad input.')
    options.add_nova_conf_arguments(parser, "a controller's")
    parser.add_argument('--project', metavar='PROJECT',
                        help='only preemptions that took a server of this '
                        'project (a victim\'s owner)')
    parser.add_argument('--requester-project', metavar='PROJECT',
                        help='only preemptions made for a request of this '
                        'project')
    parser.add_argument('--host', metavar='HOST',
                        help='only preemptions on this compute host')
    parser.add_argument('--since', type=arguments.moment, metavar='TIME',
                        help='only victims terminated at this ISO 8601 time '
                        'or later (UTC unless it says otherwise)')
    parser.add_argument('--until', type=arguments.moment, metavar='TIME',
                        help='only victims terminated before this time')
    parser.add_argument('-f', '--format', choices=(TABLE, JSON),
                        default=TABLE,
                        help='a table for people (default) or JSON')
    parser.set_defaults(func=history_command)


def history_command(args):
    if args.since and args.until and args.since >= args.until:
        raise errors.UsageError('--since %s is not before --until %s' % (
            _when(args.since), _when(args.until)))
    if not args.config_file and not args.config_dir:
        raise errors.UsageError('give the nova.conf with Nova\'s database '
                                'settings: --config-file PATH')
    with warnings.catch_warnings():
        # Nova's libraries warn, on standard error, that eventlet is
        # deprecated: nothing an operator reading the history can act on.
        warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
        # Loaded here: the other commands need no Nova.
        from opie.nova.request import history
        context = load_nova(args)
    try:
        kept = history.read(context, args.since, args.until, args.host)
    except Exception as exc:
        raise errors.UsageError('cannot read Nova\'s database with %s: %s'
                                % (', '.join(args.config_file)
                                   or args.config_dir,
                                   ' '.join(str(exc).split())[:300])) \
            from None
    found = [e for e in entries(kept) if matches(e, args)]
    if args.format == JSON:
        print(json.dumps(found, indent=2, sort_keys=True))
    else:
        print(table(found))
    return 0


def load_nova(args):
    """Nova's configuration from the nova.conf files, as ``nova-manage``
    reads it; an admin context."""
    import nova.config
    from nova import context as nova_context
    from nova import objects
    from oslo_config import cfg
    argv = ['opie-manage']
    for path in args.config_file:
        argv += ['--config-file', path]
    if args.config_dir:
        argv += ['--config-dir', args.config_dir]
    try:
        nova.config.parse_args(argv, init_rpc=False)
    except cfg.Error as exc:
        raise errors.UsageError(' '.join(str(exc).split())) from None
    objects.register_all()
    return nova_context.get_admin_context()


def _when(moment):
    """ISO 8601 in UTC, to the microsecond where the database has it:
    an entry's time given back to ``--since`` finds that entry."""
    return moment.isoformat(
        timespec='microseconds' if moment.microsecond else 'seconds'
    ).replace('+00:00', 'Z')


def entries(kept):
    """The preemptions of ``kept`` (:class:`opie.nova.request.history.Kept`,
    oldest first): its victims grouped by the explanation they share, each
    a dict of JSON types, oldest first."""
    found = {}
    for one in kept:
        record = one.explanation or {
            'reason': None, 'why': 'no explanation: its details are not one',
            'victims': [{'uuid': one.victim}]}
        request = record.get('request') or {}
        listed = tuple(sorted(str(v.get('uuid')) for v in
                              record.get('victims') or ()))
        key = (one.host, record.get('reason'), request.get('instance_uuid'),
               listed)
        entry = found.get(key)
        if entry is None:
            entry = found[key] = dict(record, time=_when(one.time),
                                      host=one.host, cell=one.cell,
                                      recorded=[])
        entry['recorded'].append(one.victim)
        owners = entry.setdefault('recorded_projects', [])
        if one.project is not None and one.project not in owners:
            owners.append(one.project)
    return list(found.values())


def matches(entry, args):
    request = entry.get('request') or {}
    projects = {v.get('project_id') for v in entry.get('victims') or ()}
    projects.update(entry.get('recorded_projects') or ())
    return ((args.project is None or args.project in projects)
            and (args.requester_project is None
                 or args.requester_project == request.get('project_id')))


def _num(value):
    return '-' if value is None else '%g' % value


def table(found):
    """``found`` (from :func:`entries`) for people: one block each."""
    if not found:
        return 'No preemption kept matches.'
    blocks = []
    for entry in found:
        request = entry.get('request')
        if request:
            what = 'for server %s of project %s (flavor %s: %s vCPU, %s MB, ' \
                '%s GB)' % tuple(_text(request.get(k)) for k in (
                    'instance_uuid', 'project_id', 'flavor', 'vcpus',
                    'memory_mb', 'disk_gb'))
        else:
            what = '%s (no request)' % _text(entry.get('reason'))
        lines = ['%s  %s  %s' % (entry['time'], _text(entry['host']), what),
                 '  why: %s' % _text(entry.get('why')),
                 '  cost %s (offset %s), ranked by %s' % (
                     _num(entry.get('cost')), _num(entry.get('offset')),
                     _text(entry.get('ranked_by')))]
        for victim in entry.get('victims') or ():
            lines.append('  victim %s  project %s  flavor %s  cost %s%s' % (
                _text(victim.get('uuid')), _text(victim.get('project_id')),
                _text(victim.get('flavor')), _num(victim.get('cost')),
                '' if victim.get('uuid') in entry['recorded']
                else '  (no opie-preempt action: spared, or not terminated)'))
        if entry.get('victims_omitted'):
            lines.append('  ... and %s more victims' % _text(entry[
                'victims_omitted']))
        for other in entry.get('runners_up') or ():
            lines.append('  runner-up %s (cost %s, %s victims): %s' % (
                _text(other.get('host')), _num(other.get('cost')),
                _text(other.get('victims')), _text(other.get('why_lost'))))
        if entry.get('runners_up_omitted'):
            lines.append('  ... and %s more hosts that could take it' % (
                _text(entry['runners_up_omitted'])))
        for why, hosts in (entry.get('refused') or {}).items():
            lines.append('  refused by %s host%s: %s' % (
                _text(hosts), '' if hosts == 1 else 's', _text(why)))
        blocks.append('\n'.join(lines))
    return '\n\n'.join(blocks)


def _text(value):
    """What the database holds, shown on one line whatever it is."""
    return '-' if value is None else oneline.escape(str(value))
