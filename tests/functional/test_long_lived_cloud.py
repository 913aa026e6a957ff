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

"""The in-process cloud keeps its databases for as long as it lives.

Its databases (Nova's API and cell databases, Placement's) are in-memory
SQLite, each the one connection of its engine's pool. oslo.db has the pool
replace a connection older than ``connection_recycle_time`` (an hour by
default): the new connection opens a new, empty database. The 5000-node
benchmark's cloud lived 63 minutes and failed with ``no such table:
services``. The pool's clock is moved two hours on here, so nothing waits.
"""
import time
import types

import fixtures

from opie.testing import cloud

LATER = 2 * 3600


class LongLivedCloud(cloud.OpieCloud):

    def later(self):
        """The clock of SQLAlchemy's pools, which decides a connection's
        age, ``LATER`` seconds on."""
        self.useFixture(fixtures.MonkeyPatch(
            'sqlalchemy.pool.base.time',
            types.SimpleNamespace(time=lambda: time.time() + LATER)))

    def test_databases_outlive_the_recycle_time(self):
        self.boot('small', 'before', host='host-A')
        before = self.usage('host-A')
        # A server no host can take goes to cell0.
        huge = self._create_flavor(name='huge', vcpu=16, memory_mb=2000,
                                   disk=20, ephemeral=0)

        self.later()

        # Nova's API database, cell0's and cell1's, and Placement's, read
        # and written.
        self.assertEqual(['before'], self.live_names())
        self.assertEqual(before, self.usage('host-A'))
        self.boot('small', 'after', host='host-A')
        self._create_server(name='nowhere', flavor_id=huge,
                            networks='none', expected_state='ERROR')
        self.assertEqual(['after', 'before', 'nowhere'], self.live_names())
        self.assertEqual(2 * before['VCPU'], self.usage('host-A')['VCPU'])
