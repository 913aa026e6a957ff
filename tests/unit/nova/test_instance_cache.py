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

import datetime

from opie.nova.request import instance_cache

T0 = datetime.datetime(2026, 11, 23, 12, 0, 0)
CELL = 'cell1'
A, B = ('host-a', 'a'), ('host-b', 'b')


class FakeCell:
    """A cell database: rows (host, node, uuid, deleted, instance,
    updated_at), and the queries the cache made."""

    def __init__(self):
        self.rows = {}
        self.queries = []
        self.now = T0

    def save(self, uuid, node, preemptible=True, deleted=False):
        self.now += datetime.timedelta(seconds=1)
        self.rows[uuid] = (node, deleted, 'I-' + uuid if preemptible
                           else None, self.now)

    def read(self, cell_uuid, hosts=None, since=None):
        self.queries.append('hosts' if since is None else 'since')
        return [(node[0], node[1], uuid, deleted,
                 None if deleted else instance, updated)
                for uuid, (node, deleted, instance, updated)
                in self.rows.items()
                if (since is None and node[0] in hosts and not deleted)
                or (since is not None and updated >= since)]


def cache_of(cell, ahead=datetime.timedelta(0)):
    """A cache whose clock is ``ahead`` of the cell's writers'."""
    return instance_cache.InstanceCache(clock=lambda: cell.now + ahead)


def listed(cache, cell, *nodes):
    found = cache.preemptibles(cell.read, CELL, list(nodes))
    return {node: sorted(found[node]) for node in nodes}


def test_a_node_is_read_once_then_kept_up_to_date():
    cell = FakeCell()
    cell.save('p1', A)
    cell.save('n1', A, preemptible=False)
    cache = cache_of(cell)
    assert listed(cache, cell, A) == {A: ['I-p1']}
    cell.save('p2', A)                  # arrives
    cell.save('p1', B)                  # moves away to a node not kept
    assert listed(cache, cell, A) == {A: ['I-p2']}
    assert cell.queries == ['hosts', 'since']
    assert listed(cache, cell, A, B) == {A: ['I-p2'], B: ['I-p1']}
    cell.save('p2', A, deleted=True)
    assert listed(cache, cell, A, B) == {A: [], B: ['I-p1']}
    assert cell.queries == ['hosts', 'since', 'since', 'hosts', 'since']


def test_changes_are_read_a_margin_before_the_last_query():
    cell = FakeCell()
    cell.save('p1', A)
    cache = cache_of(cell)
    listed(cache, cell, A)
    # Saved after that query, stamped before it began (another clock).
    cell.rows['p2'] = (A, False, 'I-p2', cell.now - instance_cache.MARGIN)
    assert listed(cache, cell, A) == {A: ['I-p1', 'I-p2']}


def test_a_scheduler_clock_ahead_of_the_writers_hides_nothing():
    cell = FakeCell()
    cell.save('p1', A)
    cache = cache_of(cell, ahead=datetime.timedelta(minutes=5))
    listed(cache, cell, A)
    listed(cache, cell, A)
    cell.save('p2', A)
    cell.save('p1', A, deleted=True)
    assert listed(cache, cell, A) == {A: ['I-p2']}


def test_a_returned_list_is_the_callers():
    cell = FakeCell()
    cell.save('p1', A)
    cache = cache_of(cell)
    cache.preemptibles(cell.read, CELL, [A])[A].clear()
    assert listed(cache, cell, A) == {A: ['I-p1']}


def test_a_failed_read_keeps_no_node():
    cell = FakeCell()
    cell.save('p1', A)
    cache = cache_of(cell)

    def down(*args, **kwargs):
        raise ConnectionError('cell database down')
    try:
        cache.preemptibles(down, CELL, [A])
    except ConnectionError:
        pass
    assert listed(cache, cell, A) == {A: ['I-p1']}


def test_one_uuid_in_two_cells_is_two_instances():
    # A cross-cell resize: the source and target rows share the uuid.
    cell = FakeCell()
    cell.save('p1', A)
    cache = cache_of(cell)
    cache.preemptibles(cell.read, 'cell1', [A])
    cache.preemptibles(cell.read, 'cell2', [A])
    cell.save('p1', A, deleted=True)
    cell.now += instance_cache.MARGIN
    cache.preemptibles(cell.read, 'cell2', [A])
    assert listed(cache, cell, A) == {A: []}


def test_a_cell_not_queried_for_long_is_read_again():
    # Rows archived meanwhile leave nothing "changed since" could see.
    cell = FakeCell()
    cell.save('p1', A)
    cache = cache_of(cell)
    listed(cache, cell, A)
    del cell.rows['p1']
    cell.now += instance_cache.MAX_GAP
    assert listed(cache, cell, A) == {A: ['I-p1']}
    cell.now += instance_cache.MAX_GAP + datetime.timedelta(seconds=1)
    assert listed(cache, cell, A) == {A: []}
    assert cell.queries == ['hosts', 'since', 'hosts']


def test_fresh_nodes_are_read_in_full():
    cell = FakeCell()
    cell.save('p1', A)
    cell.save('p2', B)
    cache = cache_of(cell)
    listed(cache, cell, A, B)
    del cell.rows['p1']
    found = cache.preemptibles(cell.read, CELL, [A, B], fresh=[A])
    assert found == {A: [], B: ['I-p2']}
    assert cell.queries == ['hosts', 'since', 'hosts']


def test_a_node_is_read_in_full_once_a_day():
    cell = FakeCell()
    cell.save('p1', A)
    cache = cache_of(cell)
    listed(cache, cell, A)
    del cell.rows['p1']         # archived unseen
    for _ in range(24 * 6):
        cell.now += instance_cache.MAX_GAP
        assert listed(cache, cell, A) == {A: ['I-p1']}
    cell.now += datetime.timedelta(seconds=1)
    assert listed(cache, cell, A) == {A: []}


def test_warming_reads_each_node_once_a_batch_of_hosts_at_a_time(
        monkeypatch):
    monkeypatch.setattr(instance_cache, 'WARM_BATCH', 2)
    cell = FakeCell()
    C = ('host-c', 'c')
    C2 = ('host-c', 'c2')
    for uuid, node in (('p1', A), ('p2', B), ('p3', C), ('p4', C2)):
        cell.save(uuid, node)
    cache = cache_of(cell)
    cache.warm(cell.read, CELL, [C2, A, B, C])
    # host-a and host-b, then host-c's two nodes: each batch a request.
    assert cell.queries == ['hosts', 'since', 'hosts']
    assert listed(cache, cell, A, B, C, C2) == {
        A: ['I-p1'], B: ['I-p2'], C: ['I-p3'], C2: ['I-p4']}
    assert cell.queries[3:] == ['since']
    # Warming again reads only what changed.
    cell.save('p5', C)
    cache.warm(cell.read, CELL, [A, B, C, C2])
    assert cell.queries[4:] == ['since', 'since']
    assert listed(cache, cell, C) == {C: ['I-p3', 'I-p5']}


def test_a_warm_up_that_fails_keeps_the_batches_read_before(monkeypatch):
    monkeypatch.setattr(instance_cache, 'WARM_BATCH', 1)
    cell = FakeCell()
    cell.save('p1', A)
    cell.save('p2', B)
    cache = cache_of(cell)
    real = cell.read

    def b_down(cell_uuid, hosts=None, since=None):
        if hosts == ['host-b']:
            raise ConnectionError('cell database down')
        return real(cell_uuid, hosts, since)
    try:
        cache.warm(b_down, CELL, [A, B])
    except ConnectionError:
        pass
    del cell.queries[:]
    # A request then reads host-b itself, and only it.
    assert listed(cache, cell, A, B) == {A: ['I-p1'], B: ['I-p2']}
    assert cell.queries == ['since', 'hosts']


def test_warming_reads_a_node_ahead_of_its_daily_full_read():
    """Nodes warmed together fall due together: the warm-up reads them
    again before they do, so no request pays a full read of them all."""
    cell = FakeCell()
    cell.save('p1', A)
    cache = cache_of(cell)
    cache.warm(cell.read, CELL, [A])
    day_ends = cell.now + instance_cache.MAX_AGE
    while cell.now + instance_cache.KEEP_WARM < day_ends:
        cell.now += instance_cache.KEEP_WARM
        cache.warm(cell.read, CELL, [A])
    assert cell.queries.count('hosts') == 2
    cell.now = day_ends + datetime.timedelta(minutes=1)
    del cell.queries[:]
    assert listed(cache, cell, A) == {A: ['I-p1']}
    assert cell.queries == ['since']
