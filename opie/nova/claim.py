"""Claim a victim: take its Placement allocations, race-free.

Several scheduler workers (or the reconciler) may pick the same preemptible
instance at once. A claim has two writes (``POST /allocations`` at
microversion 1.28, each with the consumer generation read or made):

1. **own**: rewrite the victim's allocations unchanged at the generation
   read. Placement bumps the generation and answers 409 to every other
   writer of the old one, so exactly one worker makes generation g+1.
2. **empty**: write ``allocations: {}`` at g+1. Only the owner knows g+1;
   any other writer of it is an *own* write, and whichever commits second
   gets 409. From then on the victim's room is free for every worker (its
   usage has left the provider summaries) and it is never claimed again.

Why not empty at once, as Nova's ``move_allocations`` swaps? Two emptying
writes of the same generation can *both* succeed: Placement checks the
generation only of consumers whose allocations it still reads inside the
transaction, and a racer that read the consumer before the first commit
but its (gone) allocations after it skips the check. Two workers then own
one victim. The OPIE lab's concurrent boots hit this (two scheduler
workers, MariaDB); the in-process tests, one writer at a time, cannot.

One more trap: emptying the allocations deletes the Placement consumer,
and a later write with a null generation would succeed. So a worker that
*reads* empty allocations treats the victim as already taken and never
posts.

Placement writes are what a claim costs, so the scheduler first tries to
write a new instance's allocations and take all its victims in the same
``POST /allocations`` (:func:`claim_together`). It is atomic: if Placement
refuses it (a victim taken, the room gone), nothing is written and the
scheduler claims the instance as Nova does and then its victims one by
one, with the race handling above.

The victim must be deleted or shelved soon after the claim: until it is
gone, ``nova-manage placement heal_allocations`` would give its allocations
back. The scheduler terminates it in the background, once the request is
placed; a victim left running without allocations (its scheduler died) is
terminated by the reconciler. A request that fails gives the allocations
back itself (:func:`release`).
"""
import dataclasses

from oslo_log import log as logging

LOG = logging.getLogger(__name__)
VERSION = '1.28'


class ClaimError(Exception):
    """Placement answered a claim, a release or a read unexpectedly."""


@dataclasses.dataclass(frozen=True)
class Claim:
    """A victim this worker owns, with what it held (to give it back)."""
    uuid: str
    allocations: dict
    project_id: str
    user_id: str


def read(client, context, url, version='1.9'):
    """GET ``url`` from Placement: the decoded body."""
    resp = client.get(url, version=version,
                      global_request_id=context.global_id)
    if resp.status_code != 200:
        raise ClaimError('GET %s: %s %s' % (url, resp.status_code,
                                            resp.text))
    return resp.json()


def claim(client, context, uuid):
    """Take the victim ``uuid``: a :class:`Claim`, or None if it is taken.

    ``client`` is Nova's SchedulerReportClient.
    """
    owned = _own(client, context, uuid)
    if owned is None or not _post(client, context, uuid,
                                  {uuid: _emptied(owned)}, VERSION):
        return None
    return _claim_of(uuid, owned)


def _own(client, context, uuid):
    """Step 1: what victim ``uuid`` holds, at the generation this worker
    alone made; None if it is taken or another worker owns it."""
    current = _held(client, context, uuid)
    if current is None:
        return None
    unchanged = _entry(current, _claim_of(uuid, current).allocations)
    if not _post(client, context, uuid, {uuid: unchanged}, VERSION):
        return None
    # One write, one increment (Placement's consumer generation).
    return dict(current,
                consumer_generation=current['consumer_generation'] + 1)


def _post(client, context, uuid, body, version):
    """POST /allocations: True on success, False (logged) on a conflict
    over victim ``uuid``."""
    resp = client.post('/allocations', body, version=version,
                       global_request_id=context.global_id)
    if resp.status_code == 409:
        LOG.info('OPIE: victim %s was claimed by another worker', uuid)
        return False
    if resp.status_code != 204:
        raise ClaimError('claim of %s: %s %s' % (uuid, resp.status_code,
                                                 resp.text))
    return True


def claim_together(client, context, instance_uuid, allocation, version,
                   victims):
    """Write a new instance's allocations and take its ``victims`` (uuids)
    in one atomic ``POST /allocations``.

    ``allocation`` is the instance's entry of the body (allocations,
    project and user, maybe mappings; ``version`` is at least 1.28). The
    victims' :class:`Claim` list, or None when nothing was written: a
    victim is taken, or Placement refused (another writer, no room left,
    or the instance holds allocations already, as in a move: from 1.28 a
    null consumer generation means "a new consumer", so Placement answers
    409 rather than this function asking first).
    """
    body = {instance_uuid: dict(allocation, consumer_generation=None)}
    held = {}
    for uuid in victims:
        # Owning first leaves the allocations as they were: if the write
        # below is refused, there is nothing to give back.
        held[uuid] = _own(client, context, uuid)
        if held[uuid] is None:
            return None
        body[uuid] = _emptied(held[uuid])
    resp = client.post('/allocations', body, version=version,
                       global_request_id=context.global_id)
    if resp.status_code != 204:
        LOG.info('OPIE: Placement refused instance %s with its victims %s '
                 '(%s %s)', instance_uuid, victims, resp.status_code,
                 resp.text)
        return None
    return [_claim_of(uuid, held[uuid]) for uuid in victims]


def _held(client, context, uuid):
    """What victim ``uuid`` holds in Placement, or None if taken."""
    current = read(client, context, '/allocations/%s' % uuid, VERSION)
    if not current.get('allocations'):
        LOG.info('OPIE: victim %s holds no allocations: taken already',
                 uuid)
        return None
    return current


def _entry(current, allocations):
    """A victim's body entry: ``allocations`` at the generation of
    ``current`` (what it holds, as read or owned)."""
    return {'allocations': allocations,
            'consumer_generation': current['consumer_generation'],
            'project_id': current['project_id'],
            'user_id': current['user_id']}


def _emptied(current):
    """The body entry taking a victim: no allocations."""
    return _entry(current, {})


def _claim_of(uuid, current):
    allocations = {rp: {'resources': alloc['resources']}
                   for rp, alloc in current['allocations'].items()}
    return Claim(uuid, allocations, current['project_id'],
                 current['user_id'])


def release(client, context, claimed):
    """Give a claimed victim its allocations back; False if Placement
    refuses (the error is logged: heal_allocations can repair it)."""
    body = {claimed.uuid: {'allocations': claimed.allocations,
                           'consumer_generation': None,
                           'project_id': claimed.project_id,
                           'user_id': claimed.user_id}}
    resp = client.post('/allocations', body, version=VERSION,
                       global_request_id=context.global_id)
    if resp.status_code == 204:
        return True
    LOG.error('OPIE: could not give victim %s its allocations back (%s %s);'
              ' unaccounted, it will be terminated by the reconciler',
              claimed.uuid, resp.status_code, resp.text)
    return False
