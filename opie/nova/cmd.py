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

"""``opie-scheduler``: ``nova-scheduler`` with OPIE's manager.

It is Nova's own scheduler command (same options, workers, binary name
``nova-scheduler``, RPC topic ``scheduler`` and service record), started
with :class:`opie.nova.manager.OpieSchedulerManager` instead of the stock
manager. Run it instead of ``nova-scheduler`` on every scheduler host,
with the same nova.conf plus an ``[opie]`` group. On a Nova this OPIE was
not built for (:mod:`opie.nova.compat`) it starts in safe mode
(:mod:`opie.nova.safe_mode`): Nova's stock scheduling, nothing preempted,
said loudly. A bad ``[opie]`` value stops it with a one-line message,
before it serves a request.
"""
# Nova's scheduler command sets up monkey patching when it is imported;
# nothing else of Nova may be imported before it.
from nova.cmd import scheduler  # noqa: I100 (must come first)

import sys  # noqa: E402

import nova.conf  # noqa: E402
from nova import service  # noqa: E402

from opie.nova import compat  # noqa: E402
from opie.nova import conf as opie_conf  # noqa: E402


def _checking_opie(parse_args):
    """Nova's ``parse_args``, then every ``[opie]`` option read: the
    manager's periodic tasks read two of them when Nova imports it, where
    a bad value would end in oslo.config's traceback."""
    def parse_and_check(argv, *args, **kwargs):
        parse_args(argv, *args, **kwargs)
        opie_conf.load_settings(nova.conf.CONF)
    return parse_and_check


def main():
    service.SERVICE_MANAGERS['nova-scheduler'] = compat.scheduler_manager()
    scheduler.config.parse_args = _checking_opie(scheduler.config.parse_args)
    try:
        scheduler.main()
    except opie_conf.ConfigError as exc:
        sys.exit('opie-scheduler: %s' % exc)
