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

"""Option groups of the ``opie-manage`` subcommands.

The nova.conf files a subcommand reads and the cloud it connects to are
declared the same way by every subcommand that takes them; the option
types every OPIE command shares are in :mod:`opie.arguments`.
"""
from opie import arguments


def add_nova_conf_arguments(parser, what):
    """``--config-file`` (repeatable) and ``--config-dir``: the nova.conf
    files read, as Nova reads them; ``what`` says whose they are."""
    parser.add_argument('--config-file', action='append', default=[],
                        metavar='PATH',
                        help='%s nova.conf (repeatable: merged in order, as '
                        'Nova does)' % what)
    parser.add_argument('--config-dir', metavar='DIR',
                        help='its --config-dir (nova.conf.d): the *.conf '
                        'files there are read after the --config-file ones, '
                        'by name')


def add_cloud_arguments(parser):
    """``--os-cloud`` and ``--os-region-name``, for commands that connect.

    Here rather than in :mod:`.cloud`, so that declaring them does not load
    the cloud client libraries for every ``opie-manage`` command.
    """
    group = parser.add_argument_group('cloud connection')
    arguments.add_os_cloud(group)
    group.add_argument('--os-region-name', metavar='REGION',
                       help='region (default: the cloud\'s)')
