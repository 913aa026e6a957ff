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

"""``opie-manage budget``: each project's preemption budget.

A budget bounds the preempted vCPU-hours a project's preemptible servers
may lose in the rolling window ``[opie] preemption_budget_window`` of the
schedulers' nova.conf (the default budget is ``[opie]
preemption_budget_vcpu_hours`` there). It is held in Placement, as the
inventory of the project's ledger (:mod:`opie.nova.request.ledger`), which
every scheduler worker charges in the same write that takes a victim::

    opie-manage budget set PROJECT_ID --vcpu-hours 24
    opie-manage budget unset PROJECT_ID
    opie-manage budget list [-f json]

``set`` takes effect at the next request (0: that project's servers are
never preempted); a budget below what is already spent leaves the
project nothing until enough charges expire. ``unset`` makes the project
follow the default again. ``list`` shows every ledger: projects that
have one of their own and projects the default was charged to; a project
without a ledger has the whole default left. Exit codes: 0 done, 2 bad
input or a cloud that refused (one line).
"""
import argparse
import contextlib
import json
import re

from opie import arguments
from opie.cmd import errors
from opie.cmd import options
from opie.nova.request import ledger

# Keystone's project ids: at most 64 characters (its column), made by
# keystone as hex uuids; anything with spaces or slashes is no id.
PROJECT_PATTERN = re.compile(r'^[A-Za-z0-9_.-]{1,64}$')
# Placement holds an inventory of at most 2^31 - 1 units (vCPU-minutes).
MAX_VCPU_HOURS = (2 ** 31 - 1) // 60


def project_id(text):
    if not PROJECT_PATTERN.match(text):
        raise argparse.ArgumentTypeError(
            'expected a project id (up to 64 letters, digits, "_", "-" or '
            '"."), got %r' % text)
    return text


def register(subparsers):
    parser = subparsers.add_parser(
        'budget', help="set, unset or list projects' preemption budgets",
        description='Preemption budgets per project: the most preempted '
        'vCPU-hours a project\'s preemptible servers may lose in the '
        'rolling window [opie] preemption_budget_window; a project without '
        'one has [opie] preemption_budget_vcpu_hours. Held in Placement. '
        'Exit codes: 0 done, 2 bad input or refused.')
    commands = parser.add_subparsers(dest='budget_command', required=True,
                                     metavar='COMMAND')
    set_ = commands.add_parser(
        'set', help="set a project's own budget",
        description="Set a project's own preemption budget, in place of "
        'the default (0: its servers are never preempted).')
    set_.add_argument('project', type=project_id, metavar='PROJECT_ID')
    set_.add_argument(
        '--vcpu-hours', required=True, metavar='N',
        type=arguments.finite_number(0, MAX_VCPU_HOURS),
        help='preempted vCPU-hours allowed per window (rounded to the '
        'nearest vCPU-minute)')
    set_.set_defaults(func=set_command)
    unset = commands.add_parser(
        'unset', help='the project follows the default budget again',
        description='Remove a project\'s own budget: it follows [opie] '
        'preemption_budget_vcpu_hours again (its charges still count until '
        'they expire).')
    unset.add_argument('project', type=project_id, metavar='PROJECT_ID')
    unset.set_defaults(func=unset_command)
    listing = commands.add_parser(
        'list', help='every budget, what is spent and what is left',
        description='Every project with a ledger in Placement: its budget '
        '(its own, or the default written when it was first charged), the '
        'vCPU-hours its preemptions spent in the window, and what is left.')
    listing.add_argument('-f', '--format', choices=('table', 'json'),
                         default='table',
                         help='a table for people (default) or JSON')
    listing.set_defaults(func=list_command)
    for command in (set_, unset, listing):
        options.add_cloud_arguments(command)


def _hours(minutes):
    return '%g' % round(minutes / 60, 2)


@contextlib.contextmanager
def _placement(args):
    """Placement of the cloud of ``args``, as the ledger reads and writes
    it; what the cloud or Placement refuses is one line. The cloud clients
    are imported here: they take most of opie-manage's start-up."""
    from opie.cmd import cloud
    with cloud.errors_as_usage():
        try:
            yield cloud.connect(args).placement_client()
        except ledger.LedgerError as exc:
            raise errors.UsageError('Placement: %s' % exc) from None


def set_command(args):
    minutes = round(args.vcpu_hours * 60)
    with _placement(args) as client:
        if not ledger.write(client, None, args.project, minutes,
                            explicit=True):
            raise errors.UsageError(
                'project %s: Placement kept refusing the write (its ledger '
                'kept changing): try again' % args.project)
        _, spent = ledger.read(client, None, args.project)
    line = 'project %s: preemption budget %s vCPU-hours (%d vCPU-minutes)' % (
        args.project, _hours(minutes), minutes)
    if minutes == 0:
        line += ': its servers are never preempted'
    elif spent > minutes:
        line += ('; %d already spent: none of its servers is preempted '
                 'until charges expire' % spent)
    print(line)
    return 0


def unset_command(args):
    with _placement(args) as client:
        left = ledger.unset(client, None, args.project)
    if left is None:
        print('project %s has no budget of its own: it follows the '
              'default' % args.project)
    elif left:
        print('project %s follows the default budget again; its %d '
              'vCPU-minutes charged count until they expire (the '
              'reconciler brings its ledger to the default)'
              % (args.project, left))
    else:
        print('project %s follows the default budget again' % args.project)
    return 0


def list_command(args):
    with _placement(args) as client:
        found = ledger.listing(client, None)
    if args.format == 'json':
        print(json.dumps([{
            'project_id': b.project_id,
            'source': 'set' if b.explicit else 'default',
            'budget_vcpu_minutes': b.budget,
            'spent_vcpu_minutes': b.spent,
            'remaining_vcpu_minutes': b.remaining} for b in found],
            indent=2))
        return 0
    if not found:
        print('no project has a budget ledger (each follows the default)')
        return 0
    width = max(len('PROJECT'), *(len(b.project_id) for b in found)) + 2
    print('%-*s %-8s %12s %12s %12s' % (width, 'PROJECT', 'SOURCE',
                                        'BUDGET', 'SPENT', 'REMAINING'))
    for b in found:
        print('%-*s %-8s %12s %12s %12s' % (
            width, b.project_id, 'set' if b.explicit else 'default',
            '-' if b.budget is None else _hours(b.budget), _hours(b.spent),
            '-' if b.remaining is None else _hours(b.remaining)))
    print('(vCPU-hours in the window)')
    return 0
