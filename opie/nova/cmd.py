"""``opie-scheduler``: ``nova-scheduler`` with OPIE's manager.

It is Nova's own scheduler command (same options, workers, binary name
``nova-scheduler``, RPC topic ``scheduler`` and service record), started
with :class:`opie.nova.manager.OpieSchedulerManager` instead of the stock
manager. Run it instead of ``nova-scheduler`` on every scheduler host,
with the same nova.conf plus an ``[opie]`` group. A Nova this OPIE was
not built for (:mod:`opie.nova.compat`) or a bad ``[opie]`` value stops it
with a one-line message, before it serves a request.
"""
# Nova's scheduler command sets up monkey patching when it is imported;
# nothing else of Nova may be imported before it.
from nova.cmd import scheduler  # noqa: I100 (must come first)

import sys  # noqa: E402

from nova import service  # noqa: E402

from opie.nova import compat  # noqa: E402
from opie.nova import conf as opie_conf  # noqa: E402

MANAGER = 'opie.nova.manager.OpieSchedulerManager'


def main():
    unsupported = compat.problem()
    if unsupported:
        sys.exit('opie-scheduler: %s' % unsupported)
    service.SERVICE_MANAGERS['nova-scheduler'] = MANAGER
    try:
        scheduler.main()
    except opie_conf.ConfigError as exc:
        sys.exit('opie-scheduler: %s' % exc)
