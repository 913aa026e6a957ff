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

"""One reconciler for the whole deployment: a lease in Placement.

Every scheduler process (any number of hosts, ``[scheduler] workers`` each)
runs the reconciler's periodic task, but only the holder of this lease
does the pass. The lease is a Placement consumer holding one unit of
``CUSTOM_OPIE_LEASE`` on a resource provider of its own,
``opie-coordination`` (created by the first scheduler that needs it), with
the holder's name as the consumer's user. Like the host token
(:mod:`~opie.nova.request.cas`), every change of it is a write at the
generation read, so
of two processes taking or renewing it at once exactly one succeeds.

* The holder renews it (rewrites it unchanged) before each pass and does
  the pass only if the renewal committed.
* Any other process takes it over only when it has seen the same
  generation for ``ttl`` seconds by its own monotonic clock (three
  reconcile intervals): the holder has stopped renewing, because it died
  or lost Placement. No clocks are compared between hosts.

The holder renews it again before each act of a pass (a termination, a
repair: :meth:`.reconciler.Reconciler.run`), so a pass that outlasts
``ttl`` stops before acting once another process has taken the lease.
Should a holder stall between a renewal and its act, the act itself is
still safe: each repair is a compare-and-swap on its host, and each
termination one on its victim's row (:mod:`~opie.nova.request.terminate`), so
one overcommit
is never repaired twice nor one victim terminated twice.

``nova-manage placement audit`` reports the lease as an orphaned
allocation (it is no instance); deleting it only makes the next scheduler
take it anew.
"""
import os
import time
import uuid

from oslo_log import log as logging

from opie.nova.request import cas
from opie.nova.request import claim

LOG = logging.getLogger(__name__)
PROVIDER_NAME = 'opie-coordination'
PROVIDER_UUID = str(uuid.uuid5(cas.NAMESPACE, PROVIDER_NAME))
RESOURCE_CLASS = 'CUSTOM_OPIE_LEASE'
CONSUMER_UUID = str(uuid.uuid5(cas.NAMESPACE, 'opie-reconciler-lease'))
PROJECT_ID = 'opie-lease'
# Resource classes and providers (1.7+), providers answering with their
# body (1.20).
PROVIDER_VERSION = '1.20'


class Leadership:
    """The lease as one process sees it; ``host`` is the scheduler's."""

    def __init__(self, client, host, ttl, clock=time.monotonic):
        self._client = client
        self._host = host
        self._named = (None, None)  # (pid, name)
        self.ttl = ttl
        self._clock = clock
        self._seen = None           # (generation, holder, first seen)
        self._provider_ready = False

    @property
    def name(self):
        """This process's name as a holder: host, process and a random
        part. Nova creates the manager before it forks its workers, so the
        name is made in the process that uses it."""
        pid, name = self._named
        if pid != os.getpid():
            name = '%s:%d:%s' % (self._host, os.getpid(),
                                 uuid.uuid4().hex[:8])
            self._named = (os.getpid(), name)
        return name

    def acquire(self, context):
        """Renew or take the lease: True if this process holds it now."""
        self._ensure_provider(context)
        current = claim.read_consumer(self._client, context, CONSUMER_UUID)
        generation = cas.parse(current)
        held_by = current.get('user_id') if current.get('allocations') \
            else None
        if held_by not in (None, self.name) and not self._expired(
                generation, held_by):
            return False
        taken = self._write(context, generation)
        if taken and held_by != self.name:
            LOG.info('OPIE: %s now holds the reconciler lease (was %s)',
                     self.name, held_by or 'free')
        return taken

    def _expired(self, generation, held_by):
        now = self._clock()
        if self._seen is None or self._seen[:2] != (generation, held_by):
            self._seen = (generation, held_by, now)
            return False
        return now - self._seen[2] >= self.ttl

    def _write(self, context, generation):
        body = {CONSUMER_UUID: {
            'allocations': {PROVIDER_UUID: {'resources': {
                RESOURCE_CLASS: 1}}},
            'consumer_generation': generation,
            'project_id': PROJECT_ID, 'user_id': self.name}}
        resp = self._client.post('/allocations', body,
                                 version=claim.VERSION,
                                 global_request_id=context.global_id)
        if resp.status_code == 409:
            return False
        if resp.status_code != 204:
            raise claim.ClaimError('lease: %s %s' % (resp.status_code,
                                                     resp.text))
        return True

    def _ensure_provider(self, context):
        """The lease's provider and inventory, created where missing
        (another scheduler creating them at once is no error)."""
        if self._provider_ready:
            return
        kw = dict(version=PROVIDER_VERSION,
                  global_request_id=context.global_id)
        self._client.put('/resource_classes/%s' % RESOURCE_CLASS, None,
                         **kw)
        resp = self._client.get('/resource_providers/%s' % PROVIDER_UUID,
                                **kw)
        if resp.status_code == 404:
            self._client.post('/resource_providers',
                              {'name': PROVIDER_NAME,
                               'uuid': PROVIDER_UUID}, **kw)

        inventories = claim.read(self._client, context,
                                 '/resource_providers/%s/inventories'
                                 % PROVIDER_UUID, PROVIDER_VERSION)
        if RESOURCE_CLASS not in inventories['inventories']:
            self._client.put(
                '/resource_providers/%s/inventories' % PROVIDER_UUID,
                {'resource_provider_generation':
                 inventories['resource_provider_generation'],
                 'inventories': {RESOURCE_CLASS: {'total': 1}}}, **kw)
        self._provider_ready = RESOURCE_CLASS in claim.read(
            self._client, context, '/resource_providers/%s/inventories'
            % PROVIDER_UUID, PROVIDER_VERSION)['inventories']
