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

"""``opie-manage``: operator commands.

``plan`` (below), ``flavor`` (:mod:`.flavors`), ``provider-config``
(:mod:`.provider_config_command`), ``nova-conf``
(:mod:`.nova_conf_command`), ``audit`` (:mod:`.audit`), ``snapshot``
(:mod:`.snapshot_command`), ``rollback`` (:mod:`.rollback`), ``history``
(:mod:`.history`) and ``budget`` (:mod:`.budget_command`). Bad input
always ends with a one-line message naming the problem and exit code 2.

``opie-manage plan`` is a dry run (:data:`PLAN_DESCRIPTION`). The snapshot
file is read by :func:`opie.core.snapshot.load`, with limits, since it may
come from anywhere; whatever it holds, a problem is one line naming the
file.
"""
import json
import os
import sys

from opie import arguments
from opie import oneline
from opie import version as opie_version
from opie.cmd import audit
from opie.cmd import budget_command
from opie.cmd import errors
from opie.cmd import flavors as flavor_cmd
from opie.cmd import history
from opie.cmd import nova_conf_command
from opie.cmd import provider_config_command
from opie.cmd import rollback
from opie.cmd import snapshot_command
from opie.core import costs
from opie.core import resources as res
from opie.core import scheduling
from opie.core import snapshot
from opie.core import victims as victims_mod

EXIT_NO_HOST = 1
# What a reader that went away (``| head``) makes opie-manage exit with.
EXIT_BROKEN_PIPE = 1
NON_NEGATIVE = arguments.whole_number(0)
PLAN_DESCRIPTION = (
    'Dry run: given a JSON snapshot of the cloud (see the plan page of the '
    'operator guide) and a request, print where the request would go and '
    'which preemptible instances would be killed for it, with every '
    'candidate host\'s cost. Exit codes: 0 a host was found, 1 no host can '
    'take the request, 2 bad input (the message names the problem).')


def _plan_parser(subparsers):
    plan = subparsers.add_parser(
        'plan', help='dry run: where would a request go, what would die',
        description=PLAN_DESCRIPTION)
    plan.add_argument('--snapshot', required=True, metavar='FILE',
                      help='JSON snapshot of hosts, flavors and instances')
    what = plan.add_mutually_exclusive_group(required=True)
    what.add_argument('--flavor', metavar='NAME',
                      help='request one instance of this snapshot flavor')
    what.add_argument('--vcpus', type=NON_NEGATIVE, metavar='N',
                      help='request this many vCPUs (with --memory-mb and '
                      '--disk-gb)')
    plan.add_argument('--memory-mb', type=NON_NEGATIVE, metavar='M',
                      help='RAM of the request in MB (with --vcpus)')
    plan.add_argument('--disk-gb', type=NON_NEGATIVE, metavar='D',
                      help='disk of the request in GB (with --vcpus)')
    plan.add_argument('--preemptible', action='store_true',
                      help='the request is preemptible (never preempts)')
    plan.add_argument('--cost', default='period', metavar='SPEC',
                      help='cost plugins with multipliers, e.g. "period" or '
                      '"period=1,count=60" (default: period)')
    plan.add_argument('--period-seconds', type=arguments.finite_number(),
                      default=costs.DEFAULT_PERIOD_SECONDS, metavar='S',
                      help='billing period of the period cost (default '
                      '3600)')
    plan.add_argument('--ranking', choices=scheduling.RANKINGS,
                      default=scheduling.VICTIMS,
                      help='score hosts by their cheapest sufficient victim '
                      'set (default) or, as the paper\'s Algorithm 4, by '
                      'all their preemptibles')
    plan.add_argument('--max-victims', type=NON_NEGATIVE, metavar='N',
                      help='never preempt more than N instances')
    plan.add_argument('--format', choices=('table', 'json'),
                      default='table',
                      help='a table for people (default) or JSON')
    plan.set_defaults(func=plan_command)


def _request(args, flavors):
    if args.flavor is not None:
        if args.memory_mb is not None or args.disk_gb is not None:
            raise errors.UsageError('--memory-mb and --disk-gb go with '
                                    '--vcpus, not with --flavor')
        if args.flavor not in flavors:
            raise errors.UsageError(
                'unknown flavor %r (the snapshot has: %s)'
                % (args.flavor, ', '.join(sorted(flavors)) or 'none'))
        wanted = flavors[args.flavor]
    else:
        if args.memory_mb is None or args.disk_gb is None:
            raise errors.UsageError('--vcpus needs --memory-mb and --disk-gb')
        wanted = res.Resources(args.vcpus, args.memory_mb, args.disk_gb)
    return scheduling.Request(wanted, args.preemptible)


def plan_command(args):
    try:
        snap = snapshot.load(args.snapshot)
    except snapshot.SnapshotError as exc:
        raise errors.UsageError(str(exc)) from None
    request = _request(args, snap.flavors)
    try:
        model = costs.load_cost_model(args.cost, args.period_seconds)
    except ValueError as exc:
        raise errors.UsageError('--cost: %s' % exc) from None
    decision = scheduling.schedule(request, snap.hosts, model, snap.now,
                                   args.max_victims, args.ranking,
                                   snap.budgets)
    if args.format == 'json':
        print(json.dumps(_as_json(decision), indent=2))
    else:
        print(_as_table(request, decision, model, args))
    if decision.host is None:
        print('opie-manage plan: %s' % decision.reason, file=sys.stderr)
        return EXIT_NO_HOST
    return 0


def _as_json(decision):
    return {
        'host': decision.host,
        'victims': [v.uuid for v in decision.victims],
        'cost': decision.cost,
        'ranking': [{'host': o.host, 'fits': o.fits, 'tier': o.tier,
                     'cost': o.cost, 'score': o.score,
                     'victims': [v.uuid for v in o.victims]}
                    for o in decision.ranking],
    }


def _names(instances):
    return ', '.join(victims_mod.label(i) for i in instances) or '-'


def _as_table(request, decision, model, args):
    kind = 'preemptible' if request.preemptible else 'normal'
    lines = ['Request: %s, %s%s' % (
        kind, request.resources,
        ' (flavor %s)' % args.flavor if args.flavor else ''),
        'Cost: %s (billing period %g s); ranking: %s' % (
            model, args.period_seconds, args.ranking), '']
    if decision.ranking:
        width = max(len(o.host) for o in decision.ranking) + 2
        # TIER: the highest tier among the host's victims (a normal
        # request takes from the lowest tier first).
        header = '%-*s %-5s %4s %10s %10s  %s' % (
            width, 'HOST', 'FITS', 'TIER', 'SCORE', 'COST', 'VICTIMS')
        lines.append(header)
        for o in decision.ranking:
            lines.append('%-*s %-5s %4s %10g %10g  %s' % (
                width, o.host, 'yes' if o.fits else 'no',
                '-' if o.fits else o.tier, o.score, o.cost,
                _names(o.victims)))
        lines.append('')
    if decision.host is None:
        lines.append('No host: %s' % decision.reason)
    elif decision.victims:
        lines.append('Selected %s: preempt %s (cost %g)' % (
            decision.host, _names(decision.victims), decision.cost))
    else:
        lines.append('Selected %s: fits without preemption'
                     % decision.host)
    return '\n'.join(lines)


def build_parser():
    parser = oneline.ArgumentParser(
        prog='opie-manage',
        description='Operator tools for OPIE, the OpenStack Preemptible '
        'Instances Extension.')
    parser.add_argument('--version', action='version',
                        version='%(prog)s ' + opie_version.release(),
                        help='print the version of OPIE and exit')
    subparsers = parser.add_subparsers(dest='command', required=True,
                                       metavar='COMMAND')
    _plan_parser(subparsers)
    flavor_cmd.register(subparsers)
    provider_config_command.register(subparsers)
    nova_conf_command.register(subparsers)
    audit.register(subparsers)
    snapshot_command.register(subparsers)
    rollback.register(subparsers)
    history.register(subparsers)
    budget_command.register(subparsers)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        rc = args.func(args)
        # Output still buffered fails here rather than, with a traceback,
        # when the interpreter exits.
        sys.stdout.flush()
        return rc
    except errors.UsageError as exc:
        print('opie-manage %s: error: %s'
              % (args.command, oneline.escape(str(exc))), file=sys.stderr)
        return errors.EXIT_BAD_INPUT
    except BrokenPipeError:
        # The reader went away (opie-manage ... | head): stop quietly, as
        # a command killed by SIGPIPE would. What is left in the buffer
        # goes to /dev/null, so the final flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


if __name__ == '__main__':
    sys.exit(main())
