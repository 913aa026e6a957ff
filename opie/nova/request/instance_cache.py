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

"""Each node's preemptible instances, kept between requests.

A normal request on a cloud full of preemptibles needs the preemptible
instances of every host it does not fit, to find the cheapest victims:
reading them all on every request costs in proportion to the cloud, not
to the request. A scheduler process keeps them instead, per compute node,
and each request brings them up to date with one query per cell: the
instances changed (``updated_at``) since the cell's last query, a
:data:`MARGIN` further back. What that cannot see is bounded: a cell not
queried for :data:`MAX_GAP` is forgotten, a node is read in full again
every :data:`MAX_AGE`, and the kept lists only choose: a victim's row is
read again before it is written. Each worker warms its cache before it
serves and every :data:`KEEP_WARM` after.

Why each bound holds: ``doc/source/design/index.rst``, "Modules in
detail".
"""
import datetime
import threading

from oslo_utils import timeutils

from opie.core import resources as res

# How much further back than the previous query each query looks.
MARGIN = datetime.timedelta(seconds=60)
# A cell not queried for this long is read again in full, node by node.
MAX_GAP = datetime.timedelta(minutes=10)
# A node read in full this long ago is read in full again.
MAX_AGE = datetime.timedelta(days=1)
# How often a scheduler process warms its cache again (well within
# MAX_GAP, so that a cell stays known between requests).
KEEP_WARM = MAX_GAP / 2
# Hosts read per query when warming: the lock is let go between batches.
WARM_BATCH = 50


class InstanceCache:
    """Core Instances of each node, current to each cell's last query.

    Each call is given ``read(cell_uuid, hosts=None, since=None)``, which
    reads the cell's instances as ``(host, node, uuid, deleted, core
    Instance or None when not preemptible, updated_at as naive UTC)``:
    those on ``hosts`` (not deleted), or those changed since ``since``
    (deleted ones included).
    """

    def __init__(self, clock=timeutils.utcnow):
        self._clock = clock
        self._lock = threading.Lock()
        self._nodes = {}        # (cell, host, node) -> {uuid: Instance}
        self._where = {}        # (cell, uuid) -> (cell, host, node)
        self._synced = {}       # cell -> when its last query began
        self._read_at = {}      # (cell, host, node) -> its last full read
        self._stamps = {}       # cell -> the newest updated_at read in it
        # (cell, host, node) -> Placement usage its instances left
        # unexplained at its last read (host_records.InstanceLoader).
        self._unexplained = {}

    def preemptibles(self, read, cell_uuid, nodes, fresh=()):
        """{(host, node): [core Instance, ...]} of ``nodes`` in the cell,
        every preemptible instance (eligible or not), current now; the
        ``fresh`` ones read in full."""
        with self._lock:
            self._catch_up(read, cell_uuid)
            too_old = self._synced[cell_uuid] - MAX_AGE
            for node in nodes:
                key = (cell_uuid,) + node
                if node in fresh or self._read_at.get(key, too_old) < too_old:
                    self._drop(key)
            missing = {node for node in nodes
                       if (cell_uuid,) + node not in self._nodes}
            if missing:
                self._load(read, cell_uuid, missing)
            return {node: list(self._nodes[(cell_uuid,) + node].values())
                    for node in nodes}

    def warm(self, read, cell_uuid, nodes):
        """Read the ``nodes`` of the cell not kept, or whose daily full
        read falls due before the next warm-up, :data:`WARM_BATCH` hosts
        at a time, each batch as a request would (:meth:`preemptibles`)."""
        by_host = {}
        for node in nodes:
            by_host.setdefault(node[0], []).append(node)
        hosts = sorted(by_host)
        for start in range(0, len(hosts), WARM_BATCH):
            batch = [node for host in hosts[start:start + WARM_BATCH]
                     for node in by_host[host]]
            self.preemptibles(read, cell_uuid, batch,
                              fresh=self._due(cell_uuid, batch))

    def _due(self, cell_uuid, nodes):
        """The ``nodes`` whose daily full read (:data:`MAX_AGE`) falls
        before the next warm-up: read ahead, so that no request pays it.
        (Nodes warmed together would all fall due together.)"""
        soon = self._clock() - (MAX_AGE - 2 * KEEP_WARM)
        with self._lock:
            return {node for node in nodes
                    if self._read_at.get((cell_uuid,) + node, soon) < soon}

    def unexplained(self, cell_uuid, node):
        """The preemptible usage Placement counted on ``node`` that its
        instances did not explain, as last told (:meth:`explain`)."""
        return self._unexplained.get((cell_uuid,) + node, res.ZERO)

    def explain(self, cell_uuid, node, excess):
        """Placement counts ``excess`` on ``node`` beyond its instances:
        kept (no more than was known before, unless read in full since)."""
        with self._lock:
            key = (cell_uuid,) + node
            if excess.is_zero():
                self._unexplained.pop(key, None)
            else:
                self._unexplained[key] = excess

    def _catch_up(self, read, cell_uuid):
        began = self._clock()
        last = self._synced.get(cell_uuid)
        if last is not None and began - last > MAX_GAP:
            for key in [k for k in self._nodes if k[0] == cell_uuid]:
                self._drop(key)
            self._stamps.pop(cell_uuid, None)
        elif last is not None:
            # The writers' clocks, not this one, stamp the rows: the query
            # starts from the older of this clock's last query and the
            # newest stamp read, so a scheduler clock ahead of theirs
            # hides nothing.
            since = min(last, self._stamps.get(cell_uuid, last)) - MARGIN
            for host, node, uuid, deleted, instance, stamp in read(
                    cell_uuid, since=since):
                self._stamped(cell_uuid, stamp)
                self._forget(cell_uuid, uuid)
                if not deleted:
                    self._put((cell_uuid, host, node), uuid, instance)
        self._synced[cell_uuid] = began

    def _stamped(self, cell_uuid, stamp):
        """Keep the newest row stamp read in the cell."""
        if stamp is not None:
            self._stamps[cell_uuid] = max(
                stamp, self._stamps.get(cell_uuid, stamp))

    def _load(self, read, cell_uuid, nodes):
        found = {node: {} for node in nodes}
        for host, node, uuid, _, instance, stamp in read(
                cell_uuid, hosts=sorted({host for host, _ in nodes})):
            self._stamped(cell_uuid, stamp)
            if (host, node) in found and instance is not None:
                found[(host, node)][uuid] = instance
        # Only now: a read that failed leaves the nodes to the next one.
        for node, instances in found.items():
            key = (cell_uuid,) + node
            self._nodes[key] = {}
            self._read_at[key] = self._synced[cell_uuid]
            for uuid, instance in instances.items():
                self._forget(cell_uuid, uuid)
                self._put(key, uuid, instance)

    def _drop(self, key):
        self._read_at.pop(key, None)
        for uuid in self._nodes.pop(key, {}):
            del self._where[(key[0], uuid)]

    def _forget(self, cell_uuid, uuid):
        key = self._where.pop((cell_uuid, uuid), None)
        if key is not None:
            del self._nodes[key][uuid]

    def _put(self, key, uuid, instance):
        """Keep ``instance`` if it is preemptible and its node is kept."""
        if instance is not None and key in self._nodes:
            self._nodes[key][uuid] = instance
            self._where[(key[0], uuid)] = key
