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

"""Publish each preemptible flavor's interruption rates as extra specs.

The reconciler's lease holder (:meth:`.reconciler.Reconciler.
publish_rates`) does it every ``[opie] interruption_rates_interval``
seconds; the rates are :mod:`opie.core.interruptions`'. One computation
reads, in each cell but cell0 (whose servers never ran):

1. the servers of the preemptible flavors (by ``instance_type_id``: Nova
   sets it to the flavor's id at boot and at a resize) still there or
   changed since the week began (Nova saves a server as it deletes it),
   only the columns a life needs: a tenant's many servers cost a few
   small rows each, never their user data;
2. the ``opie-preempt`` instance actions (:mod:`~opie.nova.request.terminate`
   records one on
   each victim) of those servers started in the week, :data:`CHUNK`
   servers per statement.

A server's life ends when it is deleted, or when it was last changed if
it is soft-deleted or shelved offloaded (it holds no room and cannot be
preempted, so it would only dilute the rate); a row without a creation
time is left out.

The extra specs are written through Nova's objects in the API database,
as the scheduler already reads flavors and request specs there: no
credentials nor endpoint are needed, and only the keys that changed are
written (:func:`opie.core.interruptions.to_write`), so a flavor untouched
in a week is not rewritten each time. Writing so bypasses the API's
extra spec validation, which would accept them anyway: Nova refuses an
unknown key only in a namespace it knows, and ``opie`` is not one (as for
``opie:preemptible``). Tenants read them as any flavor's extra specs (the
API's policy lets every project reader see them, from microversion 2.61
in ``openstack flavor show``).
"""
from oslo_log import log as logging
from oslo_utils import timeutils
import sqlalchemy as sa

from nova.compute import vm_states
from nova import context as nova_context
from nova.db.main import api as main_db
from nova.db.main import models
from nova import objects

from opie.core import contract
from opie.core import interruptions
from opie.nova.request import host_records
from opie.nova.request import terminate

LOG = logging.getLogger(__name__)
WEEK = max(contract.WINDOWS.values())
# Servers per statement of the actions' query: far below any database's
# limit on a statement's size.
CHUNK = 1000
# A server in these states holds no room and cannot be preempted.
ENDED = (vm_states.SOFT_DELETED, vm_states.SHELVED_OFFLOADED)


def publish(context, now=None):
    """Compute every preemptible flavor's rates and write those changed;
    {flavor name: extra specs written} (empty when nothing changed)."""
    now = now or timeutils.utcnow()
    flavors = [f for f in objects.FlavorList.get_all(context)
               if host_records.is_preemptible(f)]
    if not flavors:
        return {}
    lives, preempted = [], []
    for cell in objects.CellMappingList.get_all(context):
        if cell.is_cell0():
            continue
        with nova_context.target_cell(context, cell) as cctxt:
            found = _lives(cctxt, [f.id for f in flavors], now - WEEK)
            lives += found
            if found:
                preempted += _preempted(cctxt, [life.uuid for life in found],
                                        now - WEEK)
    rates = interruptions.rates(lives, preempted, now,
                                [f.id for f in flavors])
    written = {}
    for flavor in flavors:
        changed = interruptions.to_write(
            flavor.extra_specs, interruptions.specs(rates[flavor.id], now))
        if changed:
            flavor.save_extra_specs(to_add=changed)
            written[flavor.name] = changed
    if written:
        LOG.info('OPIE: interruption rates published: %s', written)
    return written


@main_db.pick_context_manager_reader
def _lives(context, flavor_ids, since):
    """The servers of ``flavor_ids`` still there and those changed since
    ``since``, as core Lives."""
    instance = models.Instance
    rows = context.session.query(
        instance.uuid, instance.instance_type_id, instance.created_at,
        instance.deleted, instance.deleted_at, instance.vm_state,
        instance.updated_at).filter(
            instance.instance_type_id.in_(flavor_ids),
            sa.or_(instance.deleted == 0, instance.updated_at >= since))
    return [interruptions.Life(
        uuid, flavor_id, timeutils.normalize_time(created_at),
        _end(deleted, deleted_at, vm_state, updated_at))
        for uuid, flavor_id, created_at, deleted, deleted_at, vm_state,
        updated_at in rows if created_at is not None]


def _end(deleted, deleted_at, vm_state, updated_at):
    """When a server's life as a preemptible ended (None: not yet)."""
    if deleted:
        end = deleted_at or updated_at
    elif vm_state in ENDED:
        end = updated_at
    else:
        return None
    return end and timeutils.normalize_time(end)


@main_db.pick_context_manager_reader
def _preempted(context, uuids, since):
    """(uuid, time) of each ``opie-preempt`` action of ``uuids`` started
    since ``since``."""
    action = models.InstanceAction
    found = []
    for first in range(0, len(uuids), CHUNK):
        found += [(uuid, timeutils.normalize_time(start)) for uuid, start in
                  context.session.query(action.instance_uuid,
                                        action.start_time)
                  .filter(action.action == terminate.ACTION,
                          action.instance_uuid.in_(
                              uuids[first:first + CHUNK]),
                          action.start_time >= since)]
    return found
