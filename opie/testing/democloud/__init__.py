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

"""An in-process OpenStack cloud for ``opie-bot demo`` and its tests.

Nova and Placement run in this process on Nova's own functional test
harness, with OPIE's scheduler plugin, and Nova's API is served on a real
127.0.0.1 port, so ``opie-bot`` and the task agents talk to it as real
subprocesses.  It needs Nova, which ``opie-bot`` does not: import it
through :func:`load` for a clear message when Nova is missing.
"""
import importlib
import logging
import warnings

NEEDS = ('the demo needs the functional extras: '
         'pip install openstack-opie[functional]')


class Unavailable(Exception):
    """Nova (or its test harness) is not installed."""


def load():
    """The :mod:`opie.testing.democloud.cloud` module, Nova imported."""
    # The demo's console is for the job's progress: Nova's own deprecation
    # notices (eventlet) and log lines emitted outside the harness' logging
    # fixture would only bury it.
    logging.getLogger('nova').addHandler(logging.NullHandler())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            # Nova decides how to monkey patch in nova.tests.functional; it
            # must come before anything else of Nova.
            importlib.import_module('nova.tests.functional')
        return importlib.import_module('opie.testing.democloud.cloud')
    except ImportError as exc:
        raise Unavailable('%s (%s)' % (NEEDS, exc)) from None
