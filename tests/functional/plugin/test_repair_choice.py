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

"""What a repair of the reconciler takes when only preemptibles younger
than their minimum uptime can cover an overcommit: as few of them as it
can (an overcommit must go)."""
import dataclasses

from opie.core import host as host_mod
from opie.core import resources as res
from opie.nova.periodic import reconciler
from tests.unit.core import helpers


class _Fixed:
    """A cost model whose costs are given."""

    def __init__(self, prices):
        self.prices = prices

    def costs(self, instances, host, now):
        return list(self.prices)


def test_a_repair_breaks_as_few_minimum_uptimes_as_it_can():
    # Excess of 2 vCPUs; one old server (dear) and two young ones (cheap).
    # No set without a young server covers it: the old one and one young
    # one break one minimum uptime, the two cheap young ones two (found
    # by review).
    old = dataclasses.replace(helpers.inst('old', helpers.SMALL, 120),
                              minimum_uptime=600)
    young = [dataclasses.replace(helpers.inst(n, helpers.SMALL, 5),
                                 minimum_uptime=600) for n in ('y1', 'y2')]
    host = host_mod.Host.from_instances(
        'h', res.Resources(1, 8000, 100), [old] + young)
    excess = res.Resources(2, 0, 0)
    chosen = reconciler._repair_victims(_Fixed([10.0, 1.0, 1.0]), host,
                                        excess, helpers.NOW)
    broken = [v.name for v in chosen.victims
              if dict((i.uuid, i) for i in host.preemptibles)[v.uuid]
              .protected(helpers.NOW)]
    assert len(broken) == 1 and 'old' in [v.name for v in chosen.victims]
    assert chosen.cost == 11.0
