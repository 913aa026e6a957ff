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

"""``opie-manage audit``: is OPIE really on, and what to fix if not.

A missed piece silently breaks preemption: a flavor without its resource
overrides, a compute without the preemptible inventory, the filter left
out of ``enabled_filters``, the stock ``nova-scheduler`` still running.
The audit looks at a nova.conf, at a running cloud, or both::

    # on a scheduler or compute host, as Nova reads its files
    opie-manage audit --config-file /etc/nova/nova.conf [--role compute]
    # anywhere, with admin credentials
    opie-manage audit --cloud --os-cloud admin

It prints every problem with the thing at fault and how to fix it, as
text or, with ``--format json``, as one JSON object for monitoring. Exit
codes: 0 nothing wrong, 1 problems found, 2 bad input (the message names
it).
"""
import dataclasses
import datetime
import json

from opie.cmd import audit_conf
from opie.cmd import errors
from opie.cmd import nova_conf
from opie.cmd import options

EXIT_PROBLEMS = 1
ROLES = {'all': (audit_conf.SCHEDULER, audit_conf.COMPUTE),
         audit_conf.SCHEDULER: (audit_conf.SCHEDULER,),
         audit_conf.COMPUTE: (audit_conf.COMPUTE,)}


def register(subparsers):
    parser = subparsers.add_parser(
        'audit', help='check that OPIE is set up right, say how to fix it',
        description='Check a nova.conf (--config-file) and/or a running '
        'cloud (--cloud) for what OPIE needs; print each problem with how '
        'to fix it. Exit codes: 0 nothing wrong, 1 problems found, 2 bad '
        'input.')
    options.add_nova_conf_arguments(parser, 'the host\'s')
    parser.add_argument('--role', choices=sorted(ROLES), default='all',
                        help='what the host of --config-file runs: '
                        'scheduler checks filters, weighers, [opie] and '
                        'the heartbeat; compute the provider config and '
                        'shelve offload (default: all)')
    parser.add_argument('--format', choices=('text', 'json'), default='text',
                        help='text for people (default), or one JSON object '
                        'with the problems and what was checked')
    parser.add_argument('--cloud', action='store_true',
                        help='check flavors and compute nodes through the '
                        'APIs (implied by --os-cloud)')
    options.add_cloud_arguments(parser)
    parser.set_defaults(func=command)


def command(args):
    use_cloud = args.cloud or args.os_cloud is not None
    if not args.config_file and not use_cloud:
        raise errors.UsageError('nothing to audit: give --config-file, '
                                '--cloud or --os-cloud')
    found, checked = [], []
    if args.config_file:
        conf = nova_conf.load(args.config_file, args.config_dir,
                              check_opie=False)
        now = datetime.datetime.now(datetime.timezone.utc)
        found += audit_conf.check(conf, ROLES[args.role], now)
        checked.append('%s (%s)' % (nova_conf.where(conf),
                                    ' and '.join(ROLES[args.role])))
    if use_cloud:
        # Only now: the cloud clients take most of opie-manage's start-up.
        from opie.cmd import audit_cloud
        from opie.cmd import cloud
        with cloud.errors_as_usage():
            problems, summary = audit_cloud.audit(cloud.connect(args))
        found += problems
        checked.append('cloud: %s' % summary)
    if args.format == 'json':
        print(json.dumps({'problems': [dataclasses.asdict(problem)
                                       for problem in found],
                          'checked': checked}, indent=2))
        return EXIT_PROBLEMS if found else 0
    for problem in found:
        print(problem)
    print('%s; checked %s' % (
        '%d problem%s' % (len(found), '' if len(found) == 1 else 's')
        if found else 'OK, no problem', '; '.join(checked)))
    return EXIT_PROBLEMS if found else 0
