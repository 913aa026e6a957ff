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

"""Give taken victims their room back, where the host still has it.

A victim is emptied in Placement in the same write as the instance it
makes room for (:mod:`.claim`). Two things can leave it emptied yet
needed by nobody: the request it was taken for fails (Nova removes the new
instances' allocations), or the worker that took it dies, or Placement
fails, before the request's outcome is settled. Such a victim is given its
allocations back, as a new consumer, in one compare-and-swap on the host
token, where h_f still has room for it; one whose room another request
took since cannot come back without overcommitting the host, and is
terminated by the caller.

Callers: the scheduler, when a request fails
(:meth:`~opie.nova.manager.OpieSchedulerManager._give_back`), and the
reconciler,
for victims it finds holding nothing past ``[opie] claimed_grace_period``
(:mod:`~opie.nova.periodic.reconciler`), so a give-back Placement refused at
the time is made
later rather than turned into a preemption.
"""
from oslo_log import log as logging

from nova import context as nova_context
from nova import objects

from opie.nova.request import claim
from opie.nova.request import host_records
from opie.nova.request import ledger

LOG = logging.getLogger(__name__)


def on_host(client, context, record, taken, charged=None):
    """Give ``taken`` ((victim, Claim) pairs on ``record``) their
    allocations back where h_f still has room for them; the victims whose
    room is gone. A victim given back is not preempted: its charge to its
    project's budget (``charged``: victim uuid -> charge consumer, from
    :mod:`.ledger`) is deleted in the same write."""
    charged = charged or {}
    for _ in range(claim.WRITE_ATTEMPTS):
        generation, usages = host_records.read_host(client, context,
                                                    record.uuid)
        record.apply_usage(usages)
        free = record.capacity - record.normal_used - record.preemptible_used
        back, lost = [], []
        for victim, claimed in taken:
            if free.covers(victim.resources):
                free -= victim.resources
                back.append((victim, claimed))
            else:
                lost.append(victim)
        consumers = _refunds(client, context,
                             [charged[c.uuid] for _, c in back
                              if c.uuid in charged])
        consumers.update({c.uuid: claim.restored(c) for _, c in back})
        if not back or claim.write(client, context, record.uuid,
                                   generation, consumers) is not None:
            _forget_deleted(client, context, record,
                            [c.uuid for _, c in back])
            return lost
    LOG.error('OPIE: could not give victims %s back on host %s: the host '
              'kept changing; the reconciler tries again',
              [c.uuid for _, c in taken], record.host)
    return []


def _refunds(client, context, charges):
    """The part of a write deleting the ``charges`` still held, each at
    the consumer generation read now."""
    found = {uuid: claim.read_consumer(client, context, uuid)
             for uuid in charges}
    return {uuid: ledger.removed(body) for uuid, body in found.items()
            if body.get('allocations')}


def _forget_deleted(client, context, record, uuids):
    """An owner may delete a victim while it is taken: allocations given
    back to a deleted instance would never be freed."""
    if not uuids:
        return
    cell = objects.CellMapping.get_by_uuid(context, record.cell_uuid)
    with nova_context.target_cell(context, cell) as cctxt:
        found = objects.InstanceList.get_by_filters(
            cctxt.elevated(read_deleted='yes'), {'uuid': uuids})
    for instance in found:
        if instance.deleted:
            client.delete_allocation_for_instance(context, instance.uuid,
                                                  force=True)
