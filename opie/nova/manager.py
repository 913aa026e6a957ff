"""``OpieSchedulerManager``: Nova's scheduler, preempting in the same pass.

Started by ``opie-scheduler`` in place of ``SchedulerManager`` (same
binary name, RPC topic and service record). Each ``select_destinations``
call runs Nova's own filter/weigh/claim loop with a :class:`~.plan.Plan`
made current, so OPIE's filter and weighers see h_f and the victims each
host would lose. Then, phase by phase:

* **select victims**: when Nova has claimed a host for an instance (its
  standard resources, i.e. h_n) and the instance does not fit h_f there,
  the cheapest sufficient victim set on that host is chosen, as the host's
  weight promised;
* **claim**: each victim's allocations are taken with a consumer-generation
  swap (:mod:`.claim`). A new server's victims are taken in the same
  Placement write as Nova's claim of the server itself, when Placement
  accepts that write; otherwise Nova claims the server and the victims are
  taken one by one. A victim another worker took is dropped, the host's
  usage is read again and the choice is made anew; when the host can no
  longer make room the request fails;
* **terminate**: only once every instance of the request is placed, and
  in the background (:mod:`.terminate`): the claims have already freed the
  room, so the selections go back to the conductor at once. A request that
  fails gives every claimed victim its allocations back, terminates
  nothing, and its ``NoValidHost`` says why.

Rebuilds never preempt; moves may if ``[opie] preempt_on_move`` lists them.
Alternates of a normal request are hosts that fit without preemption, as
the cell conductor uses them without asking the scheduler again.

Two periodic tasks: the heartbeat (:mod:`.heartbeat`) and, on one
scheduler host, the reconciler (:mod:`.reconciler`).
"""
import copy

from oslo_log import log as logging
from oslo_service import periodic_task
from oslo_utils import timeutils
from oslo_utils import versionutils

import nova.conf
from nova import exception
from nova import objects
from nova.scheduler import manager

from opie.nova import claim
from opie.nova import conf as opie_conf
from opie.nova import heartbeat
from opie.nova import hoststate
from opie.nova import operations
from opie.nova import plan as plan_mod
from opie.nova import reconciler
from opie.nova import terminate

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF


class RoomLost(Exception):
    """Victims on the chosen host went to other workers; the instance no
    longer fits there."""


class OpieSchedulerManager(manager.SchedulerManager):

    def __init__(self, *args, **kwargs):
        self.settings = opie_conf.load_settings(CONF)
        self.terminator = terminate.Terminator(
            self.settings, opie_conf.load_service_auth(CONF))
        super().__init__(*args, **kwargs)
        self.reconciler = reconciler.Reconciler(
            self.settings, self.host_manager, self.placement_client,
            self.terminator, CONF.opie.reconcile_grace_period,
            CONF.opie.claimed_grace_period)

    @property
    def placement_client(self):
        return ClaimingClient(super().placement_client)

    # filter and score: a plan the filter and weighers read ---------------
    def _schedule(self, context, spec_obj, instance_uuids,
                  alloc_reqs_by_rp_uuid, provider_summaries,
                  allocation_request_version=None, return_alternates=False):
        elevated = context.elevated()
        plan = plan_mod.Plan(
            elevated, hoststate.request_of(spec_obj), self.settings,
            load_instances=hoststate.InstanceLoader(
                elevated, self.host_manager.cells, self.placement_client),
            may_preempt=lambda: operations.may_preempt(
                elevated, spec_obj, self.settings.preempt_on_move),
            now=timeutils.utcnow())
        claims_placement = (instance_uuids is not None
                            and alloc_reqs_by_rp_uuid is not None)
        with plan_mod.activated(plan):
            try:
                selections = super()._schedule(
                    context, spec_obj, instance_uuids,
                    alloc_reqs_by_rp_uuid, provider_summaries,
                    allocation_request_version, return_alternates)
            except exception.NoValidHost as exc:
                # Nova has removed the instances' allocations already.
                self._release_victims(elevated, plan)
                raise exception.NoValidHost(
                    reason=_join(exc.kwargs.get('reason'), plan.reason(),
                                 plan.claims))
            except RoomLost as exc:
                self._abandon(elevated, plan, claims_placement)
                raise exception.NoValidHost(
                    reason=_join(str(exc), plan.reason(), plan.claims))
            except Exception:
                self._abandon(elevated, plan, claims_placement)
                raise
        if plan.preemptions:
            self.terminator.terminate_later(plan.preemptions,
                                            terminate.request_info(spec_obj))
        return selections

    def _get_all_host_states(self, context, spec_obj, provider_summaries):
        host_states = list(super()._get_all_host_states(
            context, spec_obj, provider_summaries))
        plan = plan_mod.current()
        summaries = provider_summaries or {}
        for host_state in host_states:
            summary = summaries.get(host_state.uuid)
            record = summary and hoststate.record_from_summary(
                host_state, summary)
            plan.add(record or hoststate.record_from_host_state(host_state))
        return iter(host_states)

    def _get_alternate_hosts(self, selected_hosts, spec_obj, hosts, index,
                             num_alts, *args, **kwargs):
        # Alternates are built on without the scheduler: they must not need
        # a preemption.
        plan = plan_mod.current()
        hosts = [host for host in hosts if plan.fits(host)]
        return super()._get_alternate_hosts(
            selected_hosts, spec_obj, hosts, index, num_alts,
            *args, **kwargs)

    # select victims and claim, as each instance gets its host ------------
    def _consume_selected_host(self, selected_host, spec_obj,
                               instance_uuid=None):
        super()._consume_selected_host(selected_host, spec_obj,
                                       instance_uuid=instance_uuid)
        plan = plan_mod.current()
        record = plan.record(selected_host)
        if record is None:
            return
        # Placement holds this instance's claim: a failure must remove it.
        plan.placed.append(instance_uuid)
        option = plan.option(selected_host)
        if option is not None and not option.fits:
            self._make_room(plan, record, selected_host, instance_uuid)
        plan.place(record)

    def _make_room(self, plan, record, host_state, instance_uuid):
        """Claim victims on the host until the instance fits h_f there."""
        taken, cost = [], 0.0
        while True:
            option = plan.option(host_state)
            if option is None:
                raise RoomLost(
                    'OPIE: preemptible instances chosen on the selected '
                    'host were taken by a concurrent request.')
            if option.fits:
                break
            claimed = self._claim(plan, record, option.victims)
            taken.extend(claimed)
            if len(claimed) == len(option.victims):
                cost += option.cost
                break
            cost += sum(plan.cost_of(record, v) for v in claimed)
        if taken:
            plan.preempted(record, instance_uuid, taken, cost)

    def _claim(self, plan, record, victims):
        """Claim ``victims`` in turn, up to the first one that is lost."""
        claimed = []
        for victim in victims:
            taken = claim.claim(self.placement_client, plan.context,
                                victim.uuid)
            if taken is None:
                plan.lose(record, victim, hoststate.read_usages(
                    self.placement_client, plan.context, record.uuid))
                break
            plan.take(record, victim, taken)
            claimed.append(victim)
        return claimed

    # failure: give everything back ---------------------------------------
    def _abandon(self, context, plan, claims_placement):
        if claims_placement:
            self._cleanup_allocations(context, plan.placed)
        self._release_victims(context, plan)

    def _release_victims(self, context, plan):
        for _, victim, claimed in plan.claims:
            claim.release(self.placement_client, context, claimed)

    def init_host(self, service_ref):
        super().init_host(service_ref)
        # Nova runs the first periodic tasks up to periodic_fuzzy_delay
        # (60 s) after start: beat now, or a scheduler just started looks
        # dead to opie-manage audit for that long.
        self._opie_heartbeat(None)

    # periodic tasks ------------------------------------------------------
    @periodic_task.periodic_task(spacing=CONF.opie.heartbeat_interval,
                                 run_immediately=True)
    def _opie_heartbeat(self, context):
        try:
            heartbeat.beat(CONF.opie.heartbeat_path, self.host,
                           CONF.opie.heartbeat_interval, self.settings)
        except OSError as exc:
            LOG.warning('OPIE: cannot write heartbeat %s: %s',
                        CONF.opie.heartbeat_path, exc)

    @periodic_task.periodic_task(spacing=CONF.opie.reconcile_interval,
                                 enabled=CONF.opie.reconcile_interval > 0)
    def _opie_reconcile(self, context):
        if self._is_leader(context):
            self.reconciler.run(context)

    def _is_leader(self, context):
        """The first scheduler host (by name) that is up reconciles."""
        services = objects.ServiceList.get_by_binary(context,
                                                     'nova-scheduler')
        up = sorted(s.host for s in services
                    if self.servicegroup_api.service_is_up(s))
        return bool(up) and up[0] == self.host


class ClaimingClient:
    """Nova's report client, as ``_schedule`` claims each instance through
    it: where the instance needs victims, they are taken in the same
    Placement write."""

    def __init__(self, client):
        self._client = client

    def __getattr__(self, name):
        return getattr(self._client, name)

    def claim_resources(self, context, consumer_uuid, alloc_request,
                        project_id, user_id, allocation_request_version,
                        consumer_generation=None):
        plan = plan_mod.current()
        if (plan is not None and consumer_generation is None
                and versionutils.convert_version_to_tuple(
                    allocation_request_version)
                >= versionutils.convert_version_to_tuple(claim.VERSION)
                and self._claim_with_victims(
                    plan, context, consumer_uuid, alloc_request,
                    dict(project_id=project_id, user_id=user_id),
                    allocation_request_version)):
            return True
        return self._client.claim_resources(
            context, consumer_uuid, alloc_request, project_id, user_id,
            allocation_request_version,
            consumer_generation=consumer_generation)

    def _claim_with_victims(self, plan, context, instance_uuid,
                            alloc_request, owner, version):
        """True if the instance and its victims are claimed; False if it
        needs none, or Placement refused (nothing written)."""
        record = next((plan.records[rp] for rp in alloc_request['allocations']
                       if rp in plan.records), None)
        option = record and plan.option(record)
        if not option or option.fits:
            return False
        allocation = dict(copy.deepcopy(alloc_request), **owner)
        claims = claim.claim_together(
            self._client, context, instance_uuid, allocation, version,
            [victim.uuid for victim in option.victims])
        if claims is None:
            return False
        for victim, claimed in zip(option.victims, claims):
            plan.take(record, victim, claimed)
        plan.preempted(record, instance_uuid, option.victims, option.cost)
        return True


def _join(nova_reason, opie_reason, claims):
    parts = [p for p in (nova_reason, opie_reason) if p]
    if claims:
        parts.append('No preemptible instance was terminated.')
    return ' '.join(parts)
