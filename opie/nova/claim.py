"""Claim a victim: take its Placement allocations, race-free.

Several scheduler workers (or the reconciler) may pick the same preemptible
instance at once. The one that empties the victim's allocations with a
consumer-generation swap owns it: ``POST /allocations`` at microversion
1.28 with ``allocations: {}`` and the generation it read, as Nova's own
``move_allocations`` does. Placement answers 409 to every other writer of
that generation. From that moment the victim's room is free for every
worker (its usage has left the provider summaries) and it is never claimed
again.

One trap: emptying the allocations deletes the Placement consumer, and a
later swap with a null generation would succeed. So a worker that *reads*
empty allocations treats the victim as already taken and never posts.

The victim must be deleted or shelved right after the claim: until it is
gone, ``nova-manage placement heal_allocations`` would give its allocations
back. A request that fails gives them back itself (:func:`release`).
"""
import dataclasses

from oslo_log import log as logging

LOG = logging.getLogger(__name__)
VERSION = '1.28'


class ClaimError(Exception):
    """Placement answered a claim or a release unexpectedly."""


@dataclasses.dataclass(frozen=True)
class Claim:
    """A victim this worker owns, with what it held (to give it back)."""
    uuid: str
    allocations: dict
    project_id: str
    user_id: str


def claim(client, context, uuid):
    """Take the victim ``uuid``: a :class:`Claim`, or None if it is taken.

    ``client`` is Nova's SchedulerReportClient.
    """
    url = '/allocations/%s' % uuid
    resp = client.get(url, version=VERSION,
                      global_request_id=context.global_id)
    if resp.status_code != 200:
        raise ClaimError('GET %s: %s %s' % (url, resp.status_code,
                                            resp.text))
    current = resp.json()
    if not current.get('allocations'):
        LOG.info('OPIE: victim %s holds no allocations: taken already',
                 uuid)
        return None
    body = {uuid: {'allocations': {},
                   'consumer_generation': current['consumer_generation'],
                   'project_id': current['project_id'],
                   'user_id': current['user_id']}}
    resp = client.post('/allocations', body, version=VERSION,
                       global_request_id=context.global_id)
    if resp.status_code == 409:
        LOG.info('OPIE: victim %s was claimed by another worker', uuid)
        return None
    if resp.status_code != 204:
        raise ClaimError('claim of %s: %s %s' % (uuid, resp.status_code,
                                                 resp.text))
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
              ' it runs unaccounted until nova-manage placement '
              'heal_allocations', claimed.uuid, resp.status_code, resp.text)
    return False
