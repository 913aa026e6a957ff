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

"""Compare-and-swap on a host's token: every OPIE decision on a host is one.

Each compute node has one unit of ``CUSTOM_OPIE_HOST`` inventory (the
provider config ``opie-manage provider-config`` writes), held by the
host's *token*: a Placement consumer whose uuid every scheduler worker
derives from the node's provider uuid. Every write OPIE makes on a host
(an instance's claim, with its victims emptied or not, a preemptible
boot, a repair of the reconciler, victims given back) is one
``POST /allocations`` that also rewrites the token, unchanged, at the
consumer generation the writer knew *before* it read the host's usage.

Placement increments the generation of every consumer whose allocations
a write sets, with ``UPDATE ... WHERE generation = <the one given>``, in
the write's transaction; the token always holds its unit, so this check
always runs. Of two writers that read one host at one generation, exactly
one commits; the other gets 409, reads the host again and decides again
(other victims, or the next host). This is the optimistic concurrency of
shared-state schedulers (Google's Omega): readers never block, writers of
one host serialise, and a decision made on stale data cannot commit.

The generation is only worth anything if it was known before the usage
the decision used was read. :class:`Generations` keeps, per scheduler
process, the generation each host's token had after this process's last
write or read; a request takes a copy of it *before* Placement's
allocation candidates are fetched, so a copied generation is never newer
than the provider summaries. A host missing from the copy, or one whose
write was refused, is read again: its token's generation and its usage
from one read of its allocations, which Placement answers with one
query, so that the usage is exactly the one of that generation
(:func:`.host_records.read_host`).

A deleted token (``nova-manage placement audit --delete`` reports it as an
orphaned allocation: it is not an instance) is created again by the next
write, with a null generation, which Placement also lets only one writer
do.
"""
import threading
import uuid

from opie.core import preemptible

# Fixed forever: every worker of every release must derive the same token.
NAMESPACE = uuid.UUID('5b0b7c4e-3f0e-4c65-9a0d-0f1e6b1c0a11')
# What Placement records as the token's owner (it is nobody's instance).
PROJECT_ID = 'opie-host-token'
USER_ID = 'opie-host-token'
# A generation Placement has never given: "no token exists yet".
ABSENT = None


def consumer(provider_uuid):
    """The token consumer uuid of a compute node's resource provider."""
    return str(uuid.uuid5(NAMESPACE, str(provider_uuid)))


def entry(provider_uuid, generation):
    """The token's part of a ``POST /allocations`` body: unchanged, at
    ``generation`` (:data:`ABSENT` creates it)."""
    return {'allocations': {provider_uuid: {'resources': {
                preemptible.HOST_TOKEN: 1}}},
            'consumer_generation': generation,
            'project_id': PROJECT_ID, 'user_id': USER_ID}


def after_write(generation):
    """The token's generation once a write at ``generation`` committed
    (a new consumer starts at 0 and is incremented by the write)."""
    return 1 if generation is ABSENT else generation + 1


def parse(body):
    """The generation in a ``GET /allocations/{token}`` body (1.28)."""
    if not body.get('allocations'):
        return ABSENT
    return body['consumer_generation']


def held_at(allocations, provider_uuid):
    """The generation of ``provider_uuid``'s token among the
    ``allocations`` of ``GET /resource_providers/{uuid}/allocations``
    (1.28: each consumer's generation with its resources), or
    :data:`ABSENT` where it holds nothing."""
    held = allocations.get(consumer(provider_uuid))
    return ABSENT if held is None else held['consumer_generation']


class Generations:
    """The last token generation this process knew of each host."""

    def __init__(self):
        self._known = {}
        self._lock = threading.Lock()

    def snapshot(self):
        """A copy, to take before a request reads the hosts' usage."""
        with self._lock:
            return dict(self._known)

    def learn(self, provider_uuid, generation):
        with self._lock:
            self._known[provider_uuid] = generation

    def forget(self, provider_uuid):
        with self._lock:
            self._known.pop(provider_uuid, None)
