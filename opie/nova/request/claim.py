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

"""Write a decision on a host to Placement: one atomic compare-and-swap.

Everything OPIE decides on a host is written in one ``POST
/allocations`` that also rewrites the host's token (:mod:`.cas`) at the
generation the decision was made on:

* an instance's claim: the instance's allocations (merged with its source
  allocations for a move, as Nova's report client does), plus each victim
  with ``allocations: {}`` at the consumer generation read for it;
* a repair of the reconciler: victims emptied;
* victims given back when a request fails: their allocations, as new
  consumers (:func:`restore`).

What holds, and why:

* **One decision per host generation.** Placement increments the token's
  generation with a conditional update inside the write's transaction; of
  two writes at one generation, one commits and the other gets 409 with
  nothing written. A victim is therefore taken by exactly one writer: two
  writers choosing it read the same host, and only one commits. (A
  victim's own consumer generation does not give this: Placement checks
  it before reading the victim's allocations, and a victim emptied in
  between is skipped, so two emptying writes of one victim can both
  succeed. The token always holds its unit, so its check always runs.)
* **No decision on stale usage.** The generation a writer sends was known
  before it read the usage it decided on; any OPIE write in between moved
  the token, so the decision does not commit.
* **A victim changed by its owner is not taken.** The victim's consumer
  generation is in the write: deleted, resized or moved since it was read,
  the write gets 409 and the host is read again.

A write refused with 409 (token or victim moved, or Placement out of room)
writes nothing; the writer reads the host again and decides again.

The victim must be deleted or shelved soon after the write: until it is
gone, ``nova-manage placement heal_allocations`` would give its
allocations back. The scheduler terminates it in the background, once the
request is placed; a victim left running without allocations (its
scheduler died) is terminated by the reconciler.
"""
import dataclasses

from oslo_log import log as logging

from opie.nova.request import cas

LOG = logging.getLogger(__name__)
# Consumer generations in writes (1.28); mappings in allocation requests
# from 1.34 are accepted by the POST of the same version.
VERSION = '1.28'
# Writes tried on one host before giving up on it: each refusal means
# another writer changed the host, so a busy host is left to them.
WRITE_ATTEMPTS = 5


class ClaimError(Exception):
    """Placement answered a write or a read unexpectedly."""


class ProviderGone(ClaimError):
    """A write named a provider deleted since it was read (a project's
    ledger an operator unset, say). Placement refuses it with 400, but
    keeps the consumers it created for it, with no allocations, at
    generation 0 (:func:`left_behind`)."""


# What Placement answers a write naming a provider it does not have.
_NO_PROVIDER = 'that does not exist'
# The generation of a consumer Placement created and never wrote.
_CREATED = 0


@dataclasses.dataclass(frozen=True)
class Claim:
    """A victim as read before a write takes it (and to give it back)."""
    uuid: str
    allocations: dict
    project_id: str
    user_id: str
    generation: int


def read(client, context, url, version='1.9'):
    """GET ``url`` from Placement: the decoded body."""
    resp = client.get(url, version=version,
                      global_request_id=context.global_id)
    if resp.status_code != 200:
        raise ClaimError('GET %s: %s %s' % (url, resp.status_code,
                                            resp.text))
    return resp.json()


def left_behind(consumers, created):
    """``consumers`` (uuid -> body entry) to write again after a write
    refused with :class:`ProviderGone`: those it would have created
    (``created``, their uuids) now exist, never written, and are written
    at their generation."""
    return {uuid: dict(entry, consumer_generation=_CREATED)
            if uuid in created and entry.get('consumer_generation') is None
            else entry for uuid, entry in consumers.items()}


def created_by(consumers):
    """The uuids of ``consumers`` a write creates (no generation)."""
    return {uuid for uuid, entry in consumers.items()
            if entry.get('consumer_generation') is None}


def held(client, context, uuid):
    """What consumer ``uuid`` holds in Placement now: provider uuid ->
    ``{'resources': ...}`` (empty if nothing)."""
    return read_consumer(client, context, uuid).get('allocations') or {}


def read_consumer(client, context, uuid):
    """Placement's body of ``GET /allocations/{uuid}`` (with the consumer
    generation and owner)."""
    return read(client, context, '/allocations/%s' % uuid, VERSION)


def read_victim(client, context, uuid):
    """Victim ``uuid`` as Placement holds it: a :class:`Claim`, or None
    if it holds nothing (taken, or deleted by its owner)."""
    current = read_consumer(client, context, uuid)
    if not current.get('allocations'):
        LOG.info('OPIE: victim %s holds no allocations', uuid)
        return None
    return Claim(uuid,
                 {rp: {'resources': alloc['resources']}
                  for rp, alloc in current['allocations'].items()},
                 current['project_id'], current['user_id'],
                 current['consumer_generation'])


def emptied(victim):
    """A victim's part of a write that takes it."""
    return {'allocations': {}, 'consumer_generation': victim.generation,
            'project_id': victim.project_id, 'user_id': victim.user_id}


def restored(victim):
    """A taken victim's part of a write that gives its allocations back
    (emptying deleted its consumer: it is new again)."""
    return {'allocations': victim.allocations, 'consumer_generation': None,
            'project_id': victim.project_id, 'user_id': victim.user_id}


def write(client, context, provider_uuid, generation, consumers,
          version=VERSION):
    """One ``POST /allocations`` of ``consumers`` (uuid -> body entry)
    with the host token at ``generation``: the token's new generation, or
    None when Placement refused (409: another writer, an owner's change,
    or no room); nothing is written then."""
    body = dict(consumers)
    body[cas.consumer(provider_uuid)] = cas.entry(provider_uuid,
                                                  generation)
    resp = client.post('/allocations', body, version=version,
                       global_request_id=context.global_id)
    if resp.status_code == 409:
        LOG.info('OPIE: write on provider %s refused, host read again: %s',
                 provider_uuid, resp.text)
        return None
    if resp.status_code == 400 and _NO_PROVIDER in resp.text:
        raise ProviderGone('POST /allocations on provider %s: %s'
                           % (provider_uuid, resp.text))
    if resp.status_code != 204:
        raise ClaimError('POST /allocations on provider %s: %s %s'
                         % (provider_uuid, resp.status_code, resp.text))
    return cas.after_write(generation)
