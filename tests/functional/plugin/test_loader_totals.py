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

"""What a node's preemptible instances take, counted once per node by
:meth:`opie.nova.request.host_records.InstanceLoader.load`, follows a node read
again because Placement counts an instance the cache never saw: the
claimed victims the read brings back are dropped (asked of Placement),
not offered again."""
from unittest import mock

from opie.core import resources as res
from opie.nova.request import host_records
from tests.unit.core import helpers

CELL = 'cell'
SMALL = helpers.SMALL
MEDIUM = helpers.MEDIUM


class Cache:
    """An instance cache keeping ``kept`` per node; a full read of a node
    finds what ``database`` holds."""

    def __init__(self, kept, database):
        self.kept = kept
        self.database = database
        self.known = {}
        self.read = []

    def preemptibles(self, read, cell_uuid, nodes, fresh=()):
        for node in fresh:
            self.kept[node] = list(self.database[node])
            self.read.append(node)
        return {node: list(self.kept[node]) for node in nodes}

    def unexplained(self, cell_uuid, node):
        return self.known.get(node, res.ZERO)

    def explain(self, cell_uuid, node, excess):
        self.known[node] = excess


def _record(name, preemptible_used):
    return host_records.HostRecord(
        uuid='rp-' + name, host=name, nodename=name, cell_uuid=CELL,
        capacity=helpers.PAPER_HOST, normal_used=res.ZERO,
        preemptible_used=preemptible_used)


def _instance(name, resources):
    return helpers.inst(name, resources, minutes=60)


def _loader(cache, held=()):
    client = mock.Mock()
    client.get.return_value = mock.Mock(status_code=200, json=lambda: {
        'allocations': {'uuid-' + name: {} for name in held}})
    return client, host_records.InstanceLoader(
        mock.Mock(global_id='g'), {CELL: None}, client, cache)


def test_a_node_read_again_counts_what_the_read_found():
    q, r = _instance('q', SMALL), _instance('r', MEDIUM)
    seen = _instance('s', SMALL)
    cache = Cache({('a', 'a'): [q], ('b', 'b'): [seen]},
                  {('a', 'a'): [q, r], ('b', 'b'): [seen]})
    a, b = _record('a', SMALL + MEDIUM), _record('b', SMALL)
    _, loader = _loader(cache)

    listed = loader.load([a, b])

    assert cache.read == [('a', 'a')]
    assert listed == [(a, SMALL + MEDIUM), (b, SMALL)]
    assert a.preemptibles == [q, r]
    # Explained in full by the read: not read again next time.
    assert cache.known[('a', 'a')].is_zero()


def test_a_claimed_victim_the_read_brings_back_is_dropped():
    # Placement counts q and r; v was claimed (holds nothing) but its row
    # still names the node.
    q, r = _instance('q', SMALL), _instance('r', MEDIUM)
    v = _instance('v', MEDIUM)
    cache = Cache({('a', 'a'): [q]}, {('a', 'a'): [q, r, v]})
    a = _record('a', SMALL + MEDIUM)
    client, loader = _loader(cache, held=('q', 'r'))

    loader([a])

    assert cache.read == [('a', 'a')]
    assert a.preemptibles == [q, r]
    client.get.assert_called_once()
