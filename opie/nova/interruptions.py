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

1. the servers of the preemptible flavors still there (by
   ``instance_type_id``: Nova sets it to the flavor's id at boot and at a
   resize), and
2. those deleted since the week began (``changes-since``: Nova saves a
   server as it deletes it), with no column but the instance's own;
3. the ``opie-preempt`` instance actions (:mod:`.terminate` records one on
   each victim) of those servers started in the week.

Shelved servers count as existing: a shelved victim still counts as a
server-day until its owner deletes it.

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

from nova import context as nova_context
from nova.db.main import api as main_db
from nova.db.main import models
from nova import objects

from opie.core import interruptions
from opie.nova import hoststate
from opie.nova import terminate

LOG = logging.getLogger(__name__)
WEEK = max(interruptions.WINDOWS.values())


def publish(context, now=None):
    """Compute every preemptible flavor's rates and write those changed;
    {flavor name: extra specs written} (empty when nothing changed)."""
    now = now or timeutils.utcnow()
    flavors = [f for f in objects.FlavorList.get_all(context)
               if hoststate.is_preemptible(f)]
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


def _lives(cctxt, flavor_ids, since):
    """The servers of ``flavor_ids`` still there and those deleted since
    ``since``, as core Lives."""
    kept = objects.InstanceList.get_by_filters(
        cctxt, {'instance_type_id': flavor_ids, 'deleted': False},
        expected_attrs=[])
    # With ``deleted`` True Nova adds the soft-deleted ones, which the
    # first query leaves out.
    gone = objects.InstanceList.get_by_filters(
        cctxt.elevated(read_deleted='yes'),
        {'instance_type_id': flavor_ids, 'deleted': True,
         'changes-since': since}, expected_attrs=[])
    return [interruptions.Life(
        i.uuid, i.instance_type_id, timeutils.normalize_time(i.created_at),
        i.deleted_at and timeutils.normalize_time(i.deleted_at))
        for i in list(kept) + list(gone)]


@main_db.pick_context_manager_reader
def _preempted(context, uuids, since):
    """(uuid, time) of each ``opie-preempt`` action of ``uuids`` started
    since ``since``."""
    action = models.InstanceAction
    return [(uuid, timeutils.normalize_time(start)) for uuid, start in
            context.session.query(action.instance_uuid, action.start_time)
            .filter(action.action == terminate.ACTION,
                    action.instance_uuid.in_(uuids),
                    action.start_time >= since)]
