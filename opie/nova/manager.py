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

"""``OpieSchedulerManager``: Nova's scheduler, preempting in the same pass.

Started by ``opie-scheduler`` in place of ``SchedulerManager`` (same
binary name, RPC topic and service record). Each ``select_destinations``
call runs Nova's own filter/weigh/claim loop with a
:class:`~.request.plan.Plan` made current, so OPIE's filter and weighers
see h_f and the victims each host would lose. As Nova claims a host, OPIE
makes that claim one compare-and-swap on it (:mod:`.request.claim`), the
victims and their budget charges in the same write, so a decision made on
stale data cannot commit; the victims are terminated, or given notice,
only once every instance of the request is placed. Each worker warms its
instance cache before it serves, and a cut Placement answer is probed so
that no host is preempted while a free one went unseen.

The phases, the candidate cut and the alternates, and why:
``doc/source/design/index.rst``, "Modules in detail".
"""
import contextlib
import contextvars
import copy
import functools
import gc

from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_service import periodic_task
from oslo_utils import timeutils

import nova.conf
from nova import context as nova_context
from nova import exception
from nova.scheduler.client import report
from nova.scheduler import manager

from opie.core import explain
from opie.nova import conf as opie_conf
from opie.nova import metrics
from opie.nova import notifications
from opie.nova.periodic import heartbeat
from opie.nova.periodic import leader
from opie.nova.periodic import reconciler
from opie.nova.periodic import shelve_images
from opie.nova.request import cas
from opie.nova.request import claim
from opie.nova.request import give_back
from opie.nova.request import host_records
from opie.nova.request import instance_cache
from opie.nova.request import ledger
from opie.nova.request import notice
from opie.nova.request import operations
from opie.nova.request import plan as plan_mod
from opie.nova.request import terminate

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
# Why victims of a failed request were terminated all the same.
ROOM_TAKEN = 'room-taken'
# The token generations known when this request began (a copy).
_GENERATIONS = contextvars.ContextVar('opie_generations', default=None)


# Were objects frozen in this process before its first warm-up? (None:
# no warm-up yet.) oslo.service's eventlet launcher freezes the parent's
# objects before it forks workers, so that their pages stay shared.
_FROZEN_BEFORE = None


def settle_garbage(freeze):
    """Collect the garbage in full; if ``freeze``, move what then lives
    out of reach of Python's automatic collections until the next call.

    A warm-up leaves tens of thousands of young objects (rows read, the
    cache built): collected now, not in the next requests (0.5 s at 1000
    nodes). What lives on is mostly the instance cache, which each full
    collection in a request would scan again (9 ms at 1000 nodes, more
    than all else the worker keeps): frozen, only what is younger than the
    last warm-up is scanned. Everything frozen is taken back first, so
    that garbage cycles among what the last call froze are collected now:
    one warm-up late at worst, never kept for good.

    Taking back would also take what a launcher froze before forking
    this worker, and the collection would then write to every page the
    worker shares with its parent: where anything was frozen before the
    first warm-up, it is left so, and nothing is frozen."""
    global _FROZEN_BEFORE
    if _FROZEN_BEFORE is None:
        _FROZEN_BEFORE = gc.get_freeze_count() > 0
        if _FROZEN_BEFORE and freeze:
            LOG.info('OPIE: objects were frozen before the first warm-up '
                     '(a launcher sharing them with forked workers): the '
                     'warm-ups leave them so and freeze nothing')
    if not freeze or _FROZEN_BEFORE:
        gc.collect()
        return
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    # Python's next full collection falls due when a quarter as many
    # objects as the last one left have grown old since: collected again
    # (nothing left unfrozen), it is as soon as in a process without the
    # frozen part, not after a quarter of all that was just frozen.
    gc.collect()


class OpieSchedulerManager(manager.SchedulerManager):

    def __init__(self, *args, **kwargs):
        self.settings = opie_conf.load_settings(CONF)
        self.terminator = terminate.Terminator(
            self.settings, opie_conf.load_service_auth(
                CONF, self.settings.termination_mode))
        if self.terminator.service_auth is not None:
            self.terminator.check_login()
        self.notice = notice.Notice(self.terminator)
        self.tokens = cas.Generations()
        self.instances = instance_cache.InstanceCache()
        self.ledger_traits = ledger.Traits()
        # Did the last warm-up fail? (Its failure is logged once.)
        self.cold = False
        super().__init__(*args, **kwargs)
        self.reconciler = reconciler.Reconciler(
            self.settings, self.host_manager, self.placement_client,
            self.terminator, CONF.opie.reconcile_grace_period,
            CONF.opie.claimed_grace_period)
        self.leadership = leader.Leadership(
            self.placement_client, CONF.host,
            3 * CONF.opie.reconcile_interval)

    @property
    def placement_client(self):
        return ClaimingClient(super().placement_client, self.tokens)

    # snapshot ------------------------------------------------------------
    def select_destinations(self, *args, **kwargs):
        # Before Nova reads the candidates: a generation copied now is never
        # newer than the usage the request decides on.
        reset = _GENERATIONS.set(self.tokens.snapshot())
        try:
            with metrics.SELECT_SECONDS.time():
                return super().select_destinations(*args, **kwargs)
        except messaging.ExpectedException as exc:
            # Nova's select_destinations wraps its NoValidHost in it.
            if isinstance(exc.exc_info[1], exception.NoValidHost):
                metrics.no_room(kwargs.get('spec_obj'))
            raise
        finally:
            _GENERATIONS.reset(reset)

    # filter and score: a plan the filter and weighers read ---------------
    def _schedule(self, context, spec_obj, instance_uuids,
                  alloc_reqs_by_rp_uuid, provider_summaries,
                  allocation_request_version=None, return_alternates=False):
        elevated = context.elevated()
        plan = plan_mod.Plan(
            elevated, host_records.request_of(spec_obj), self.settings,
            load_instances=host_records.InstanceLoader(
                elevated, self.host_manager.cells, self.placement_client,
                self.instances),
            operation=lambda: operations.operation(elevated, spec_obj),
            now=timeutils.utcnow(), generations=_GENERATIONS.get(),
            remaining=ledger.Remaining(self.placement_client, elevated,
                                       self.settings.budget_minutes,
                                       self.ledger_traits))
        with plan_mod.activated(plan):
            try:
                selections = super()._schedule(
                    context, spec_obj, instance_uuids,
                    alloc_reqs_by_rp_uuid, provider_summaries,
                    allocation_request_version, return_alternates)
            except exception.NoValidHost as exc:
                # Nova has removed the new instances' allocations already.
                plan.log_refusals()
                lost = self._give_back(elevated, plan)
                raise exception.NoValidHost(
                    reason=_join(exc.kwargs.get('reason'), plan.reason(),
                                 plan.claims, lost))
            except Exception:
                self._cleanup_allocations(elevated, plan.placed)
                self._give_back(elevated, plan)
                raise
        metrics.placed(plan)
        if plan.preemptions:
            self.notice.preempt(plan.preemptions,
                                notifications.request_info(context, spec_obj))
        return selections

    def _get_all_host_states(self, context, spec_obj, provider_summaries):
        host_states = list(super()._get_all_host_states(
            context, spec_obj, provider_summaries))
        plan = plan_mod.current()
        summaries = provider_summaries or {}
        for host_state in host_states:
            summary = summaries.get(host_state.uuid)
            record = summary and host_records.record_from_summary(
                host_state, summary)
            plan.add(record or host_records.record_from_host_state(host_state))
        return iter(host_states)

    def _get_sorted_hosts(self, spec_obj, host_states, index):
        hosts = super()._get_sorted_hosts(spec_obj, host_states, index)
        plan = plan_mod.current()
        if plan is None:
            return hosts
        # Weighers are soft (their weights add up); fit and tiers are not.
        hosts = plan.lowest_tier_first(hosts)
        # The order Nova's claims follow: each preemption is explained by
        # it.
        plan.ranked(hosts)
        return hosts

    def _consume_selected_host(self, selected_host, spec_obj,
                               instance_uuid=None):
        super()._consume_selected_host(selected_host, spec_obj,
                                       instance_uuid=instance_uuid)
        plan = plan_mod.current()
        record = plan.record(selected_host)
        if record is not None:
            plan.place(record)

    # failure: give back what still fits ----------------------------------
    def _give_back(self, context, plan):
        """Give the victims of a failed request back; how many could not
        come back (and were terminated)."""
        by_host = {}
        for record, victim, claimed in plan.claims:
            by_host.setdefault(record.uuid, (record, []))[1].append(
                (victim, claimed))
        count = 0
        for record, taken in by_host.values():
            try:
                lost = give_back.on_host(self.placement_client, context,
                                         record, taken, plan.charged)
            except Exception:
                # Never instead of the request's own error. The victims
                # hold nothing and run on; the reconciler gives them back
                # (or terminates those whose room is gone meanwhile).
                LOG.exception('OPIE: could not give victims %s back on '
                              'host %s now; the reconciler will',
                              [c.uuid for _, c in taken], record.host)
                continue
            if lost:
                # Their room went to other requests: they cannot come back
                # without overcommitting the host.
                count += len(lost)
                costs = [(v, plan.cost_of(record, v)) for v in lost]
                why = ('taken for a request that then failed; other '
                       'requests took its room meanwhile, so it could not '
                       'be given back')
                self.terminator.terminate(
                    [plan_mod.Preemption(
                        record.host, record.nodename, tuple(lost), 0.0,
                        provider_uuid=record.uuid,
                        explanation=explain.repair(
                            ROOM_TAKEN, record.host, why, costs,
                            sum(c for _, c in costs)))],
                    {'reason': ROOM_TAKEN})
        return count

    def init_host(self, service_ref):
        super().init_host(service_ref)
        # Nova runs the first periodic tasks up to periodic_fuzzy_delay
        # (60 s) after start: beat now, saying the next beat may come that
        # late, or a scheduler just started looks dead to opie-manage audit
        # and rollback until then (a rollback would go on under it).
        self._beat(max(CONF.opie.heartbeat_interval,
                       CONF.periodic_fuzzy_delay))

    def pre_start_hook(self, service_ref):
        super().pre_start_hook(service_ref)
        self._opie_warm_up(None)

    # periodic tasks ------------------------------------------------------
    @periodic_task.periodic_task(
        spacing=int(instance_cache.KEEP_WARM.total_seconds()))
    def _opie_warm_up(self, context):
        try:
            host_records.warm(nova_context.get_admin_context(),
                              self.host_manager.cells, self.instances)
        except Exception:
            if not self.cold:
                LOG.exception('OPIE: could not read the preemptible '
                              'instances; serving cold (requests read the '
                              'nodes they need), warming again every %s',
                              instance_cache.KEEP_WARM)
            self.cold = True
        else:
            if self.cold:
                LOG.info('OPIE: preemptible instances read, the cache is '
                         'now warm')
            self.cold = False
        settle_garbage(CONF.opie.freeze_after_warm_up)

    @periodic_task.periodic_task(spacing=CONF.opie.heartbeat_interval,
                                 run_immediately=True)
    def _opie_heartbeat(self, context):
        self._beat(CONF.opie.heartbeat_interval)

    def _beat(self, interval):
        """The heartbeat, the next one due within ``interval`` seconds."""
        try:
            heartbeat.beat(CONF.opie.heartbeat_path, self.host, interval,
                           self.settings)
        except OSError as exc:
            LOG.warning('OPIE: cannot write heartbeat %s: %s',
                        CONF.opie.heartbeat_path, exc)
        metrics.export()

    @periodic_task.periodic_task(spacing=CONF.opie.reconcile_interval,
                                 enabled=CONF.opie.reconcile_interval > 0)
    def _opie_reconcile(self, context):
        held = False
        try:
            held = self.leadership.acquire(context)
        finally:
            metrics.lease(held)
        if held:
            renew = functools.partial(self.leadership.acquire, context)
            self.reconciler.run(context, renew=renew)
            if self.settings.termination_mode == opie_conf.SHELVE:
                shelve_images.clean(self.terminator.service_context())
            self.reconciler.publish_rates(
                context, CONF.opie.interruption_rates_interval, renew=renew)


class ClaimingClient:
    """Nova's report client, as ``_schedule`` claims each instance through
    it: each claim is one compare-and-swap on the host
    (:mod:`~opie.nova.request.claim`)."""

    def __init__(self, client, tokens):
        self._client = client
        self._tokens = tokens

    def __getattr__(self, name):
        return getattr(self._client, name)

    def get_allocation_candidates(self, context, resources):
        limit = resources._limit
        if limit is None:
            return self._client.get_allocation_candidates(context, resources)
        # One more than Nova's limit tells whether Placement cut its
        # answer; cut to the limit, it is the answer Nova would have had.
        with _limited(resources, limit + 1):
            found = self._client.get_allocation_candidates(context,
                                                           resources)
        # Nova's client answers (None, None, None) when Placement failed.
        if found is None or found[0] is None or len(found[0]) <= limit:
            return found
        found = host_records.first_candidates(found, limit)
        if (host_records.any_fits(found[1], resources.merged_resources())
                or not self._maybe_free_elsewhere(context, resources,
                                                  found[1])):
            return found
        LOG.info('OPIE: Placement returned more than %d candidates, the '
                 'limit, and none of the first fits with every instance '
                 'counted; asking for all', limit)
        with _limited(resources, None):
            return self._client.get_allocation_candidates(context,
                                                          resources)

    def _maybe_free_elsewhere(self, context, resources, summaries):
        """Could a host Placement's cut answer left out have free room
        (h_f)? Asked with one probe of the same limit, not a second full
        query: a host with free room has it in the standard classes and
        in the preemptible ones separately (both have the same capacity,
        :mod:`opie.core.provider_config`), so it is among the candidates
        for the request in both kinds of class at once. None of those:
        no host is free, and the cut answer stands, Placement's sample of
        hosts, as Nova's weighers rank a sample; OPIE ranks victims among
        it. Some that fit, or a probe cut too (it asks for one more than
        the limit to tell): maybe. Its classes are asked in the order
        the cut answer's ``summaries`` make likeliest to end Placement's
        search at the first
        (:class:`~opie.nova.request.host_records.Probe`)."""
        probe = host_records.fit_probe(resources, summaries)
        if probe is None:
            return True
        # One more than the limit again: an answer within it is whole.
        probe._limit = resources._limit + 1
        found = self._client.get_allocation_candidates(context, probe)
        if found is None or found[0] is None:
            return True
        return (len(found[0]) > resources._limit
                or host_records.any_fits(found[1],
                                         resources.merged_resources()))

    def claim_resources(self, context, consumer_uuid, alloc_request,
                        project_id, user_id, allocation_request_version,
                        consumer_generation=None):
        plan = plan_mod.current()
        record = plan and plan.record_of(alloc_request['allocations'])
        if record is None:
            return self._client.claim_resources(
                context, consumer_uuid, alloc_request, project_id, user_id,
                allocation_request_version,
                consumer_generation=consumer_generation)
        instance = self._instance_entry(
            context, consumer_uuid, alloc_request, consumer_generation,
            dict(project_id=project_id, user_id=user_id),
            plan.operation == operations.BOOT)
        # Consumers a refused write left in Placement (claim.ProviderGone).
        created = set()
        for attempt in range(claim.WRITE_ATTEMPTS):
            if attempt:
                metrics.CLAIM_RETRIES.inc()
            if record.generation is host_records.UNKNOWN:
                self._read_host(plan, context, record)
            option = plan.option(record)
            if option is None:
                return False
            victims = () if option.fits else option.victims
            claims = self._read_victims(plan, context, record, victims)
            if claims is None:
                continue
            # Each victim's charge to its project's budget goes in the
            # same write: Placement refuses it all if a budget ran out.
            charges = plan.charges(victims)
            consumers = ledger.entries(consumer_uuid, charges,
                                       plan.charges_until())
            consumers.update({c.uuid: claim.emptied(c) for c in claims})
            consumers[consumer_uuid] = instance
            try:
                generation = claim.write(
                    self._client, context, record.uuid, record.generation,
                    claim.left_behind(consumers, created),
                    allocation_request_version)
            except claim.ProviderGone:
                # A ledger deleted since it was read: read the budgets
                # again, as after a refused write.
                LOG.info('OPIE: a ledger went while host %s was written; '
                         'reading the budgets again', record.host)
                created |= claim.created_by(consumers)
                generation = None
            if generation is None:
                metrics.CLAIM_CONFLICTS.labels(writer='scheduler').inc()
                self._tokens.forget(record.uuid)
                plan.stale(record)
                plan.remaining.forget({c.project_id for c in charges})
                continue
            self._tokens.learn(record.uuid, generation)
            if instance['consumer_generation'] is None:
                # A new consumer: a failure must remove it.
                plan.placed.append(consumer_uuid)
            plan.committed(record, generation, consumer_uuid, victims,
                           claims, option.cost, charges)
            return True
        metrics.HOSTS_ABANDONED.inc()
        plan.abandoned(record)
        LOG.info('OPIE: host %s changed under %d writes in a row; trying '
                 'the next host', record.host, claim.WRITE_ATTEMPTS)
        return False

    def _instance_entry(self, context, uuid, alloc_request, generation,
                        owner, boot):
        """The instance's part of the write, as Nova's report client
        would PUT it: a move keeps its source allocations. A known
        ``boot`` holds none: no need to ask."""
        entry = copy.deepcopy(alloc_request)
        current = ({} if boot else
                   claim.read_consumer(self._client, context, uuid))
        if current.get('allocations'):
            generation = entry.get('consumer_generation',
                                   current['consumer_generation'])
            entry = report._move_operation_alloc_request(
                current['allocations'], entry)
        return dict(entry, consumer_generation=generation, **owner)

    def _read_host(self, plan, context, record):
        generation, usages = host_records.read_host(self._client, context,
                                                    record.uuid)
        self._tokens.learn(record.uuid, generation)
        plan.refresh(record, generation, usages)

    def _read_victims(self, plan, context, record, victims):
        """Each victim as Placement holds it on this host, or None (the
        host is to be read again) if one holds nothing here, or the
        database no longer has it as an eligible preemptible there."""
        gone = plan.not_victims(record, victims) if victims else set()
        claims = []
        for victim in victims:
            claimed = None if victim.uuid in gone else claim.read_victim(
                self._client, context, victim.uuid)
            if claimed is None or not host_records.holds(claimed, record,
                                                         victim.resources):
                plan.not_a_victim(record, victim.uuid)
                return None
            claims.append(claimed)
        return claims


@contextlib.contextmanager
def _limited(resources, limit):
    """Nova's ResourceRequest ``resources`` asked for with ``limit``
    candidates (None: all) for a while; Nova's own limit after."""
    nova_limit, resources._limit = resources._limit, limit
    try:
        yield
    finally:
        resources._limit = nova_limit


def _join(nova_reason, opie_reason, claims, lost):
    parts = [p for p in (nova_reason, opie_reason) if p]
    if lost:
        parts.append('%d preemptible instance(s) taken for it were '
                     'terminated: other requests took their room '
                     'meanwhile.' % lost)
    elif claims:
        parts.append('No preemptible instance was terminated.')
    return ' '.join(parts)
