"""Repair h_f overcommit: preempt on hosts where everything exceeds capacity.

Placement enforces h_n (normal instances) and the custom preemptible
classes atomically, but h_f (both together) only through OPIE's filter. Two
scheduler workers placing a preemptible and a normal instance on the same
host at once can therefore overcommit it. The reconciler finds such hosts
and terminates the cheapest preemptibles that bring them back within
capacity, with the same claim as the scheduler (so it never fights a
scheduler worker over a victim).

* Suspects are hosts whose compute node record (the resource tracker counts
  every instance) is over capacity; Placement confirms each one.
* A host is repaired only once it has been over capacity for longer than
  ``[opie] reconcile_grace_period`` seconds, so that a preemption or a
  deletion already under way can finish.
* It runs every ``[opie] reconcile_interval`` seconds on one scheduler
  host (see the manager); tests call :meth:`Reconciler.run` directly.
"""
import datetime

from oslo_log import log as logging
from oslo_utils import timeutils

from opie.core import resources as res
from opie.core import victims as victims_mod
from opie.nova import claim
from opie.nova import hoststate
from opie.nova import plan as plan_mod

LOG = logging.getLogger(__name__)


def _excess(host):
    """How far a core Host's h_f is over its capacity (zero if within)."""
    return res.Resources(*(max(0, -free) for free in host.free_full))


class Reconciler:

    def __init__(self, settings, host_manager, placement_client,
                 terminator, grace_period):
        self.settings = settings
        self.host_manager = host_manager
        self.placement_client = placement_client
        self.terminator = terminator
        self.grace = datetime.timedelta(seconds=grace_period)
        # Host uuid -> when it was first seen over capacity. Only the
        # one periodic task touches it.
        self._over_since = {}

    def run(self, context, now=None):
        """One pass; returns the Preemptions made."""
        now = now or timeutils.utcnow()
        records = [self._placement_record(context, host_state)
                   for host_state in self._suspects(context)]
        over = {r.uuid: r for r in records
                if not _excess(r.core_host()).is_zero()}
        for uuid in set(self._over_since) - set(over):
            del self._over_since[uuid]
        due = [r for r in over.values()
               if now - self._over_since.setdefault(r.uuid, now)
               >= self.grace]
        if not due:
            return []
        hoststate.InstanceLoader(context, self.host_manager.cells)(due)
        preemptions = [p for p in (self._repair(context, r, now)
                                   for r in due) if p]
        self.terminator.terminate(preemptions, {'reason': 'reconcile'})
        return preemptions

    def _suspects(self, context):
        # No uuids, no request spec: every compute node of enabled cells.
        for host_state in self.host_manager.get_host_states_by_uuids(
                context, None, None):
            if host_state.uuid is None:
                continue
            record = hoststate.record_from_host_state(host_state)
            if not _excess(record.core_host()).is_zero():
                yield host_state

    def _placement_record(self, context, host_state):
        base = '/resource_providers/%s' % host_state.uuid
        inventories = self._get(context, base + '/inventories')
        usages = self._get(context, base + '/usages')
        capacity = res.Resources(*(
            _capacity(inventories['inventories'].get(rc))
            for rc in hoststate.STANDARD_CLASSES))
        record = hoststate.HostRecord(
            uuid=host_state.uuid, host=host_state.host,
            nodename=host_state.nodename, cell_uuid=host_state.cell_uuid,
            capacity=capacity, normal_used=res.ZERO)
        record.apply_usage(usages['usages'])
        return record

    def _get(self, context, url):
        resp = self.placement_client.get(
            url, version='1.9', global_request_id=context.global_id)
        if resp.status_code != 200:
            raise claim.ClaimError('GET %s: %s %s' % (
                url, resp.status_code, resp.text))
        return resp.json()

    def _repair(self, context, record, now):
        host = record.core_host()
        excess = _excess(host)
        costs = [self.settings.cost_model.instance_cost(i, host, now)
                 for i in host.preemptibles]
        selection = victims_mod.select(excess, host.preemptibles, costs,
                                       self.settings.max_victims,
                                       host.capacity)
        if selection is None:
            LOG.warning('OPIE: host %s is over capacity by %s and no '
                        'eligible preemptible set covers it', record.host,
                        excess)
            return None
        taken = [victim for victim in selection.victims
                 if claim.claim(self.placement_client, context, victim.uuid)]
        if not taken:
            return None
        LOG.info('OPIE: host %s over capacity by %s: preempting %s',
                 record.host, excess, [v.uuid for v in taken])
        # Victims lost to a scheduler worker freed room too; what is
        # still over is left to the next pass.
        return plan_mod.Preemption(
            record.host, record.nodename, tuple(taken),
            sum(self.settings.cost_model.instance_cost(v, host, now)
                for v in taken))


def _capacity(inventory):
    if not inventory:
        return 0
    return ((inventory['total'] - inventory['reserved'])
            * inventory['allocation_ratio'])
