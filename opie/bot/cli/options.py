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

"""The options more than one command of ``opie-bot`` takes, and their
bounds."""
from opie import arguments
from opie.bot.state import datadir
from opie.bot.job import schema


def add_notice(parser):
    parser.add_argument('--notice', type=NON_NEGATIVE, metavar='SECONDS',
                        help='simulated cloud: announce each preemption '
                        'this long before it comes (default 0: no notice); '
                        'sim also shows the work lost.  A real cloud gives '
                        'its own (opie:preempt_at)')


def add_limits(parser):
    parser.add_argument('--normal-limit', type=COUNT, metavar='N',
                        help='replace every flavor\'s normal limit')
    parser.add_argument('--max-normal', type=ONE_OR_MORE, metavar='N',
                        help='with --normal-limit: the total normal limit')


# Far beyond any sensible poll interval, speed or expected preemptions.
MAX_OPTION = 1e6


POSITIVE = arguments.finite_number(0, MAX_OPTION, minimum_included=False)


NON_NEGATIVE = arguments.finite_number(0, MAX_OPTION)


# At least a second: a job of 30 days then prints 2.6 million lines at
# most, not an endless stream.
INTERVAL = arguments.finite_number(1, MAX_OPTION)


COUNT = arguments.whole_number(0, schema.MAX_COUNT)


ONE_OR_MORE = arguments.whole_number(1, schema.MAX_COUNT)


# run's options of the openstack backend: (option, attribute).
CLOUD_OPTIONS = (('--os-cloud', 'os_cloud'), ('--image', 'image'),
                 ('--network', 'network'), ('--store', 'store'),
                 ('--speed', 'speed'), ('--poll', 'poll'),
                 ('--agent-poll', 'agent_poll'), ('--retries', 'retries'),
                 ('--controller', 'controller'),
                 ('--controller-flavor', 'controller_flavor'))


def add_cloud(parser):
    # No defaults here: an option given without --backend openstack is
    # an error, and live.Settings holds the defaults.
    group = parser.add_argument_group('openstack backend')
    arguments.add_os_cloud(group)
    group.add_argument('--image',
                       help='image name or id with python3 and cloud-init '
                       '(default cirros)')
    group.add_argument('--network', help='network id, auto (default) or '
                       'none')
    group.add_argument('--store',
                       help='swift (default), or file:///PATH shared with '
                       'the servers')
    group.add_argument('--speed', type=POSITIVE,
                       help='job seconds per wall second (demo clouds; '
                       'default 1)')
    group.add_argument('--poll', type=POSITIVE, metavar='SECONDS',
                       help='wall seconds between polls (default 5)')
    group.add_argument('--agent-poll', type=POSITIVE, metavar='SECONDS',
                       help='wall seconds between agent polls (default 5)')
    group.add_argument('--retries', type=COUNT,
                       help='reruns of a task whose command fails '
                       '(default 0)')
    group.add_argument('--controller', action='store_const', const=True,
                       help='run the client on a normal server of the '
                       'project, so the job goes on with this machine off')
    group.add_argument('--controller-flavor', metavar='FLAVOR',
                       help="the controller's normal flavor (default: the "
                       "job's smallest)")


def add_job_cloud(parser):
    # resume, cancel, logs and outputs: the job's journal names its cloud.
    arguments.add_os_cloud(parser, help='override the cloud the job was '
                           'started on')


def add_data_dir(parser):
    parser.add_argument('--data-dir', default=datadir.default(),
                        metavar='DIR',
                        help='where jobs and reports are kept (default: '
                        '$%s, else ~/.local/share/opie-bot)' % datadir.ENV)


def add_format(parser):
    parser.add_argument('-f', '--format', choices=['text', 'json'],
                        default='text')
