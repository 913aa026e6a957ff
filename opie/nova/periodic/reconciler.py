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

"""Repair what concurrent or interrupted scheduling left behind.

Runs every ``[opie] reconcile_interval`` seconds in the one scheduler
process that leads (:mod:`.leader`), which renews its leadership before
each act and stops when it cannot; tests call :meth:`Reconciler.run`
directly. Each pass gives back or terminates the claimed victims left
running (their worker died, or a give-back failed), and repairs h_f
overcommit that Nova wrote without the scheduler, in one compare-and-swap
on the host; then it ends the preemptibles past their maximum lifetime
(:mod:`.lifetime`), cares for the budgets' ledgers
(:mod:`opie.nova.request.ledger`), exports its success and the capacity
left (:mod:`opie.nova.metrics`), and publishes the interruption rates
(:mod:`.interruptions`). Every termination goes through the scheduler's
own path (:mod:`opie.nova.request.terminate`).

What each repair waits for, and why: ``doc/source/design/index.rst``,
"Modules in detail".
"""
import dataclasses
import datetime
import functools

from oslo_log import log as logging
from oslo_utils import timeutils

from opie.core import explain
from opie.core import preemptible
from opie.core import resources as res
from opie.core import victims as victims_mod
from opie.nova import metrics
from opie.nova.periodic import interruptions
from opie.nova.periodic import lifetime
from opie.nova.request import claim
from opie.nova.request import give_back
from opie.nova.request import host_records
from opie.nova.request import ledger
from opie.nova.request import notice
from opie.nova.request import plan as plan_mod
from opie.nova.request import terminate

LOG = logging.getLogger(__name__)


def _excess(host):
    """How far a core Host's h_f is over its capacity (zero if within)."""
    return host.free_full.shortfall(res.ZERO)


def _overdue(since, found, now, grace):
    """Keys of ``found`` seen in ``since`` (key -> first seen, updated)
    for at least ``grace``."""
    for key in set(since) - set(found):
        del since[key]
    return [key for key in found
            if now - since.setdefault(key, now) >= grace]


class LeadershipLost(Exception):
    """The lease holder could not renew its lease: another process holds
    it now."""


class Reconciler:

    def __init__(self, settings, host_manager, placement_client,
                 terminator, grace_period, claimed_grace_period):
        self.settings = settings
        self.host_manager = host_manager
        self.placement_client = placement_client
        self.terminator = terminator
        self.grace = datetime.timedelta(seconds=grace_period)
        self.claimed_grace = datetime.timedelta(seconds=claimed_grace_period)
        # When each host was first seen over capacity, and each claimed
        # victim first seen running. Only the one periodic task touches
        # them.
        self._over_since = {}
        self._claimed_since = {}
        # When this process last published the interruption rates.
        self._rates_at = None
        self.ledgers = ledger.Keeper(placement_client)
        self.lifetime = lifetime.Lifetime(terminator, placement_client)

    def run(self, context, now=None, renew=lambda: True):
        """One pass; returns the Preemptions made. ``renew()`` is called
        before each act and must return True for the pass to go on: the
        lease holder renews its lease there (:mod:`.leader`), so a pass that
        outlives its lease stops before it acts."""
        now = now or timeutils.utcnow()
        # No uuids, no request spec: every compute node of enabled cells.
        host_states = [
            host_state for host_state in
            self.host_manager.get_host_states_by_uuids(context, None, None)
            if host_state.uuid is not None]
        done = []
        try:
            for record, instances in self._claimed(context, host_states,
                                                   now):
                self._renew(renew)
                lost = self._settle(context, record, instances)
                if lost:
                    LOG.warning('OPIE: preemptible instances %s on host %s '
                                'hold no allocations and their room is '
                                'taken: claimed but never terminated, '
                                'terminating them', [i.uuid for i in lost],
                                record.host)
                    done += self.terminator.terminate(
                        [self._preemption(record, lost, now, terminate.LEFT,
                                          self._why_left())],
                        {'reason': terminate.LEFT})
            for repair in self._overcommitted(context, host_states, now,
                                              renew):
                done += self.terminator.terminate([repair],
                                                  {'reason': 'reconcile'})
            done += self.lifetime.run(context, self.host_manager.cells, now,
                                      functools.partial(self._renew, renew))
            self.ledgers.run(context, now, self.settings.budget_minutes,
                             renew)
            metrics.reconciled()
        except LeadershipLost:
            LOG.warning('OPIE: the reconciler lease was lost during a pass; '
                        'its holder goes on')
        except (claim.ClaimError, ledger.LedgerError) as exc:
            # Placement failed mid-pass: the next pass starts over.
            LOG.warning('OPIE: reconcile pass stopped: %s', exc)
        return done

    def publish_rates(self, context, interval, now=None,
                      renew=lambda: True):
        """Publish the interruption rates if this process never did, or
        did ``interval`` seconds or more before ``now`` (0: never); the
        extra specs written, by flavor name."""
        now = now or timeutils.utcnow()
        if not interval or (
                self._rates_at is not None and now - self._rates_at
                < datetime.timedelta(seconds=interval)):
            return {}
        if not renew():
            LOG.warning('OPIE: the reconciler lease was lost before the '
                        'interruption rates were published')
            return {}
        # Set first: a computation that fails waits its interval too, not
        # the next pass (its cost is bounded by the interval, not by the
        # reconcile interval).
        self._rates_at = now
        return interruptions.publish(context, now)

    @staticmethod
    def _renew(renew):
        if not renew():
            raise LeadershipLost()

    # claimed victims left running ----------------------------------------
    def _claimed(self, context, host_states, now):
        """Preemptibles that run on a node where they hold nothing, and
        are not moving, for the grace period: (record, instances) by
        host."""
        records = [host_records.record_from_host_state(host_state)
                   for host_state in host_states]
        # Every one: a victim an operator locked, or whose delete was
        # begun, after its room was given is still in that room's way.
        self._loader(context).load(records, every=True)
        claimed = {}
        for record in records:
            if not record.preemptibles:
                continue
            held = host_records.holders(self.placement_client, context,
                                        record.uuid)
            for instance in record.preemptibles:
                # Midway through a move the row names the source while the
                # allocations sit on the destination: it moves.
                if (instance.uuid not in held and instance.task_state
                        not in preemptible.MOVING_TASK_STATES):
                    claimed[instance.uuid] = (record, instance)
        due = _overdue(self._claimed_since, claimed, now, self.claimed_grace)
        by_host = {}
        for uuid in due:
            if notice.announced(self.terminator.compute_api, context, uuid,
                                now):
                # Its notice runs: the scheduler that gave it stops it.
                continue
            record, instance = claimed[uuid]
            by_host.setdefault(record.uuid, (record, []))[1].append(instance)
        return list(by_host.values())

    def _settle(self, context, record, instances):
        """Of ``instances``, running on ``record``'s node without holding
        anything there, give back those that hold nothing anywhere where
        the host still has room for them; the ones to terminate: the rest
        of those, one whose delete was begun and never done, and one
        holding only a stale allocation elsewhere (a resize reverted after
        its room was taken)."""
        back = [i for i in instances
                if i.task_state not in preemptible.LEAVING_TASK_STATES
                and not claim.held(self.placement_client, context, i.uuid)]
        lost = self._give_back(context, record, back) if back else []
        return lost + [i for i in instances if i not in back]

    def _give_back(self, context, record, instances):
        """Give ``instances`` (preemptibles on ``record``'s node holding
        nothing) their room back where the host still has it: taken for a
        request that then failed, say, when Placement could not take them
        back. Those whose room is gone."""
        placed = host_records.record_from_placement(self.placement_client,
                                                    context, record)
        by_uuid = {i.uuid: i for i in instances}
        claims = self._loader(context).emptied_claims(placed, by_uuid)
        lost = give_back.on_host(self.placement_client, context, placed,
                                 [(by_uuid[c.uuid], c) for c in claims])
        if len(claims) < len(instances):
            LOG.info('OPIE: instances %s left the cell database meanwhile',
                     sorted(set(by_uuid) - {c.uuid for c in claims}))
        return lost

    # h_f overcommit ------------------------------------------------------
    def _overcommitted(self, context, host_states, now, renew):
        """Each repair as it is made (renewing before each)."""
        records = [host_records.record_from_placement(
            self.placement_client, context, host_state, token=False)
            for host_state in host_states]
        metrics.host_classes(host_states, records)
        over = {r.uuid: r for r in records
                if not _excess(r.core_host()).is_zero()}
        due = [over[uuid] for uuid in
               _overdue(self._over_since, over, now, self.grace)]
        if not due:
            return
        self._loader(context)(due)
        for record in due:
            self._renew(renew)
            repair = self._repair(context, record, now)
            if repair:
                yield repair

    def _repair(self, context, record, now):
        # The usage a write decides on is the one of the generation it
        # carries.
        record.generation, usages = host_records.read_host(
            self.placement_client, context, record.uuid)
        record.apply_usage(usages)
        host = record.core_host()
        excess = _excess(host)
        if excess.is_zero():
            return None
        selection = _repair_victims(self.settings.cost_model, host, excess,
                                    now)
        if selection is None:
            LOG.warning('OPIE: host %s is over capacity by %s and no '
                        'eligible preemptible set covers it', record.host,
                        excess)
            return None
        claims = [claim.read_victim(self.placement_client, context, v.uuid)
                  for v in selection.victims]
        if not all(c is not None and host_records.holds(c, record, v.resources)
                   for c, v in zip(claims, selection.victims)):
            return None
        # One compare-and-swap on the host, at the token generation read
        # before its usage: a scheduler worker or another reconciler that
        # changed the host since makes this refused, and the next pass
        # reads it again.
        if claim.write(self.placement_client, context, record.uuid,
                       record.generation,
                       {c.uuid: claim.emptied(c) for c in claims}) is None:
            metrics.CLAIM_CONFLICTS.labels(writer='reconciler').inc()
            return None
        LOG.info('OPIE: host %s over capacity by %s: preempting %s',
                 record.host, excess, [v.uuid for v in selection.victims])
        return self._preemption(
            record, selection.victims, now, 'reconcile',
            'reconciler: the host was over capacity by %s (every instance '
            'counted) for more than %d s; its victims cover that, chosen '
            'as for a request (lowest tier, then cost)' % (
                excess, self.grace.total_seconds()))

    # helpers -------------------------------------------------------------
    def _loader(self, context):
        return host_records.InstanceLoader(context, self.host_manager.cells,
                                           self.placement_client)

    def _why_left(self):
        return ('reconciler: claimed by a scheduler that never terminated '
                'it (it held no allocations on its node for more than %d s) '
                'and its room could not be given back'
                % self.claimed_grace.total_seconds())

    def _preemption(self, record, victims, now, reason, why):
        host = record.core_host()
        costs = [(v, self.settings.cost_model.instance_cost(v, host, now))
                 for v in victims]
        cost = sum(c for _, c in costs)
        return plan_mod.Preemption(
            record.host, record.nodename, tuple(victims), cost,
            provider_uuid=record.uuid, explanation=explain.repair(
                reason, record.host, why, costs, cost))


def _repair_victims(cost_model, host, excess, now):
    """The victims of a repair. No cap on their number: ``[opie]
    max_victims`` bounds what one request may cost others, an overcommit
    must go. For the same reason minimum uptimes are kept where a set
    without a young preemptible covers the excess, and otherwise as many
    as can be: each young preemptible is priced above all the others
    together, so the cheapest set breaks the fewest (logged). Tiers order
    the choice as for a request; budgets do not bound it."""
    costs = cost_model.costs(host.preemptibles, host, now)
    selection = victims_mod.select(excess, host.preemptibles, costs, None,
                                   host.capacity, now)
    if selection is not None:
        return selection
    young = {i.uuid for i in host.preemptibles if i.protected(now)}
    penalty = sum(costs) + 1.0
    selection = victims_mod.select(
        excess, [dataclasses.replace(i, minimum_uptime=0.0)
                 for i in host.preemptibles],
        [c + penalty if i.uuid in young else c
         for i, c in zip(host.preemptibles, costs)],
        None, host.capacity, now)
    if selection is None:
        return None
    broken = [v.uuid for v in selection.victims if v.uuid in young]
    LOG.warning('OPIE: host %s is over capacity by %s and only preemptibles '
                'younger than their minimum uptime cover it: preempting %d '
                'of them (%s)', host.name, excess, len(broken),
                ', '.join(broken))
    price = dict(zip((i.uuid for i in host.preemptibles), costs))
    return dataclasses.replace(selection, cost=sum(
        price[v.uuid] for v in selection.victims))
