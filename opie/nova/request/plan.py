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

"""What one scheduling request has decided so far.

The scheduler serves many requests at once, so nothing about a request is
kept on the manager: ``OpieSchedulerManager`` opens a :class:`Plan` for
each ``select_destinations`` call and makes it current (a context
variable) while Nova's filters and weighers run. OPIE's filter and weighers
read it; with no current plan they are running under the stock
``nova-scheduler`` and fall back to a safe mode that never preempts.

A plan holds one :class:`~opie.nova.request.host_records.HostRecord` per
candidate host, follows every placement and claimed victim of the request,
caches the core's verdict on each host until that host changes, and remembers
why hosts were refused so ``NoValidHost`` can say it.
"""
import collections
import contextlib
import contextvars
import dataclasses
import datetime
import math

from oslo_log import log as logging

from opie.core import budgets as core_budgets
from opie.core import explain
from opie.core import preemptible
from opie.core import resources as res
from opie.core import scheduling
from opie.nova.request import host_records
from opie.nova.request import ledger
from opie.nova.request import operations

# A host OPIE cannot write to atomically is never chosen.
NO_TOKEN = ('no %s inventory on the compute node (write the provider '
            'config: see the upgrade guide)' % preemptible.HOST_TOKEN)

_CURRENT = contextvars.ContextVar('opie_plan', default=None)
LOG = logging.getLogger(__name__)
# Hosts whose refusal a failed request logs one line each for.
LOGGED_REFUSALS = 50


def current():
    """The plan of the request being scheduled, or None (stock scheduler)."""
    return _CURRENT.get()


@contextlib.contextmanager
def activated(plan):
    token = _CURRENT.set(plan)
    try:
        yield plan
    finally:
        _CURRENT.reset(token)


@dataclasses.dataclass(frozen=True)
class Preemption:
    """Victims claimed on one host for one instance (or the reconciler)."""
    host: str
    nodename: str
    victims: tuple
    cost: float
    instance_uuid: str | None = None
    # The compute node's resource provider, where the victims' room was
    # taken.
    provider_uuid: str | None = None
    # Why (:mod:`opie.core.explain`): the decision as made when the
    # victims were claimed, kept with each victim's instance action.
    explanation: dict | None = dataclasses.field(default=None,
                                                 compare=False)


class Plan:
    """One request's hosts, placements and victims.

    :param context: the (admin) RequestContext of the request
    :param request: the core Request
    :param settings: :class:`opie.nova.conf.Settings`
    :param load_instances: a :class:`~.host_records.InstanceLoader`, or
        alike: called to fill ``preemptibles`` of a list of HostRecords
        (one batch; ``fresh=True`` to read past its cache), and asked
        which victims the database no longer has as such
        (``not_victims``)
    :param operation: callable telling (once, when first needed) which
        operation the request is for (:func:`.operations.operation`):
        normal boots may preempt, moves if ``[opie] preempt_on_move``
        lists them, rebuilds never
    :param now: the time costs are computed at
    :param generations: host token generations known before the request
        read the hosts' usage (:meth:`.cas.Generations.snapshot`)
    :param remaining: what each project has left of its preemption budget
        (:class:`.ledger.Remaining`), or None: no budget
    """

    def __init__(self, context, request, settings, load_instances,
                 operation, now, generations=None, remaining=None):
        self.context = context
        self.request = request
        self.settings = settings
        self.now = now
        self._load_instances = load_instances
        # A preemptible request never preempts; a normal one asks once.
        self._may_preempt = False if request.preemptible else None
        self._operation = operation
        # The operation, once asked: a boot's instance holds nothing yet.
        self.operation = None
        self._generations = generations or {}
        self.records = {}           # host uuid -> HostRecord
        self._options = {}          # host uuid -> HostOption or None
        self.refusals = {}          # host -> why it refused the request
        self.victims_taken = 0
        self.placed = []            # instances Placement holds claims for
        self.claims = []            # (record, victim, claim.Claim)
        # Instances never to choose again in this request: taken by it, or
        # found holding nothing on their host.
        self._not_victims = set()
        # Hosts where a victim chosen from the kept instances was found
        # stale: read in full on their next refresh.
        self._stale_lists = set()
        self.preemptions = []       # Preemption, to terminate at the end
        self.remaining = remaining
        # Victim uuid -> the consumer charging it, to refund on give-back.
        self.charged = {}
        # Nova's order of the hosts for the instance being placed, with
        # their weights: [(host uuid, weight or None)], None until Nova
        # ranks them; the weighing it comes from; hosts whose claims kept
        # being refused.
        self._ranked = None
        self._weighed = None
        self._abandoned = set()

    # hosts ---------------------------------------------------------------
    def add(self, record):
        if record.uuid in self._generations:
            record.generation = self._generations[record.uuid]
        self.records[record.uuid] = record

    def record_of(self, allocations):
        """The HostRecord of the compute node an allocation request names,
        or None."""
        return next((self.records[rp] for rp in allocations
                     if rp in self.records), None)

    def record(self, host_state):
        return self.records.get(host_state.uuid)

    @property
    def may_preempt(self):
        if self._may_preempt is None:
            self.operation = self._operation()
            self._may_preempt = (
                self.operation == operations.BOOT
                or self.operation in self.settings.preempt_on_move)
        return self._may_preempt

    # filter and score ----------------------------------------------------
    def option(self, host_state):
        """The core's HostOption for this host now, or None if refused."""
        record = self.record(host_state)
        if record is None:
            return None
        if record.uuid not in self._options:
            self._ensure_instances(record)
            option, why = self._assess(record)
            if option is None:
                self.refusals[record.host] = why
            else:
                self.refusals.pop(record.host, None)
            self._options[record.uuid] = option
        return self._options[record.uuid]

    def lowest_tier_first(self, host_states):
        """``host_states`` as Nova's weighers sorted them, except that the
        hosts the request fits go first, then hosts by the tier of their
        victims, lowest first, and the hosts the plan refuses last: a
        normal request never preempts while a host has room, and takes
        from the lowest tier first, on every host, whatever the weights
        (they add up: an aggregate's multiplier could outweigh either).
        The sort is stable, so Nova's weighers order hosts alike."""
        def rank(host_state):
            option = self.option(host_state)
            if option is None:
                return math.inf
            return 0 if option.fits else 1 + option.tier
        return sorted(host_states, key=rank)

    def passes(self, host_state):
        return self.option(host_state) is not None

    def fits(self, host_state):
        option = self.option(host_state)
        return option is not None and option.fits

    def _assess(self, record):
        host = record.core_host()
        if record.token_inventory is False:
            return None, NO_TOKEN
        if (not self.request.preemptible
                and not host.free_full.covers(self.request.resources)
                and not self.may_preempt):
            return None, scheduling.NO_ROOM_FULL
        max_victims = self.settings.max_victims
        if max_victims is not None:
            max_victims -= self.victims_taken
        return scheduling.assess_host(
            self.request, host, self.settings.cost_model, self.now,
            max_victims=max_victims, ranking=self.settings.ranking,
            budgets=self._budgets(host))

    def _budgets(self, host):
        """The core's Budgets of the projects that own ``host``'s
        preemptibles, read only where victims are needed: a host the
        request fits costs no budget read."""
        if (self.remaining is None or self.remaining.unlimited
                or self.request.preemptible
                or host.free_full.covers(self.request.resources)):
            return None
        left = self.remaining.of({i.project_id for i in host.preemptibles})
        if not left:
            # No project here has a budget: the search is unconstrained.
            return None
        return core_budgets.Budgets(self.settings.budget_window, left)

    def charges(self, victims):
        """The :class:`.ledger.Charge` of each of ``victims`` whose
        project has a budget; the ledgers of those projects exist once
        this returns (so a write can charge them)."""
        budgets = core_budgets.Budgets(
            self.settings.budget_window,
            self.remaining.of({v.project_id for v in victims})
            if self.remaining is not None else {})
        found = [ledger.Charge(v.uuid, v.project_id,
                               budgets.charge(v, self.now))
                 for v in victims if budgets.limit(v.project_id) is not None]
        # A victim not launched yet costs nothing (and Placement holds no
        # allocation of 0).
        found = [c for c in found if c.minutes]
        if found:
            self.remaining.ensure({c.project_id for c in found})
        return found

    def charges_until(self):
        """When charges the request writes expire."""
        return self.now + datetime.timedelta(
            seconds=self.settings.budget_window)

    def _needs_instances(self, record):
        if record.preemptibles is not None:
            return False
        if res.ZERO.covers(record.preemptible_used):
            return False
        if self._refused_unread(record):
            return False
        if self.settings.ranking == scheduling.ALL_PREEMPTIBLES:
            return True
        if self.request.preemptible:
            return False
        fits = record.free_full().covers(self.request.resources)
        return not fits and self.may_preempt

    def _refused_unread(self, record):
        """Is ``record`` refused whatever its preemptibles are? Told from
        its summary alone (no token, or
        :func:`~opie.core.scheduling.refusal_by_usage`), with the reason
        :meth:`_assess` gives it read or not: its instances are not read."""
        return record.token_inventory is False or bool(
            scheduling.refusal_by_usage(
                self.request, record.capacity, record.normal_used,
                record.preemptible_used))

    def _ensure_instances(self, record):
        """Load preemptibles of every host that needs them, in one batch,
        the first time any of them does."""
        if not self._needs_instances(record):
            return
        self._load_instances([r for r in self.records.values()
                              if self._needs_instances(r)])

    def _changed(self, record, shared=False):
        """``record``'s verdict is stale; every host's too if ``shared``:
        the change spent what all of them count on (the request's victim
        cap, a project's preemption budget)."""
        if shared:
            self._options.clear()
        else:
            self._options.pop(record.uuid, None)

    # placement -----------------------------------------------------------
    def place(self, record):
        """The request's resources now occupy ``record``."""
        if self.request.preemptible:
            record.preemptible_used += self.request.resources
        else:
            record.normal_used += self.request.resources
        self._changed(record)

    def committed(self, record, generation, instance_uuid, victims,
                  claims, cost, charges=()):
        """Placement took ``victims`` (with their ``claims``) on
        ``record`` for ``instance_uuid`` at token ``generation``, and
        charged their projects' budgets ``charges``
        (:class:`.ledger.Charge`): the request's later instances have that
        much less."""
        record.generation = generation
        if charges:
            spent = collections.Counter()
            for charge in charges:
                spent[charge.project_id] += charge.minutes
                self.charged[charge.victim_uuid] = ledger.charge_consumer(
                    charge.victim_uuid, instance_uuid)
            self.remaining.spend(spent)
        for victim, claimed in zip(victims, claims):
            record.preemptibles.remove(victim)
            record.preemptible_used -= victim.resources
            self.victims_taken += 1
            self.claims.append((record, victim, claimed))
            self._not_victims.add(victim.uuid)
        if victims:
            # Explained from the verdicts before they are cleared.
            self.preempted(record, instance_uuid, victims, cost)
            self._changed(record, shared=bool(
                charges or self.settings.max_victims is not None))

    def not_victims(self, record, victims):
        """The uuids of ``victims`` the database says are no eligible
        preemptible instance on ``record`` now, or too young to be one."""
        return self._load_instances.not_victims(
            record, [victim.uuid for victim in victims], self.now)

    def not_a_victim(self, record, uuid):
        """``uuid`` holds nothing on the host (another writer or its owner
        moved it), or its row says it is no eligible victim there now:
        never choose it again in this request, and read the host's
        preemptibles in full on its next refresh."""
        self._not_victims.add(uuid)
        self._stale_lists.add(record.uuid)
        self.stale(record)

    def stale(self, record):
        """A write on ``record`` was refused: read it again before the
        next one."""
        record.generation = host_records.UNKNOWN
        self._changed(record)

    def refresh(self, record, generation, usages):
        """``record`` as Placement counts it now: ``usages`` read after
        the token's ``generation``; its preemptibles listed again (read in
        full where one chosen was found stale)."""
        record.generation = generation
        record.apply_usage(usages)
        fresh = record.uuid in self._stale_lists
        self._stale_lists.discard(record.uuid)
        self._load_instances([record], fresh=fresh)
        record.preemptibles = [i for i in record.preemptibles
                               if i.uuid not in self._not_victims]
        self._changed(record)

    def cost_of(self, record, victim):
        return self.settings.cost_model.instance_cost(
            victim, record.core_host(), self.now)

    def preempted(self, record, instance_uuid, victims, cost):
        self.preemptions.append(Preemption(
            record.host, record.nodename, tuple(victims), cost,
            instance_uuid, record.uuid, self._explain(record, victims)))

    # explanations --------------------------------------------------------
    def weighed(self, weighed_hosts):
        """Nova is weighing ``weighed_hosts`` (its WeighedHost objects,
        whose weights are final once Nova has sorted them)."""
        self._weighed = weighed_hosts

    def ranked(self, host_states):
        """Nova's filters and weighers ranked ``host_states``, in this
        order, for the instance it places next."""
        weights = {w.obj.uuid: w.weight for w in self._weighed or ()}
        self._weighed = None
        self._ranked = [(h.uuid, weights.get(h.uuid)) for h in host_states]
        self._abandoned.clear()

    def abandoned(self, record):
        """``record`` changed under every claim of the instance: Nova goes
        on to its next host."""
        self._abandoned.add(record.uuid)

    def _explain(self, record, victims):
        """The decision to take ``victims`` on ``record``, as made now:
        in Nova's order of the hosts where Nova ranked them (this one
        among them), else in OPIE's."""
        ranked = self._ranked or ()
        if record.uuid in dict(ranked):
            order, ranked_by = ranked, explain.NOVA
        else:
            order, ranked_by = [(uuid, None) for uuid, option in
                                self._options.items()
                                if option is not None], explain.OPIE
        candidates = [self._candidate(uuid, weight) for uuid, weight in order
                      if uuid in self.records]
        named = {c.host for c in candidates}
        refused = collections.Counter(
            why for host, why in self.refusals.items() if host not in named)
        return explain.decision(
            record.host, [(v, self.cost_of(record, v)) for v in victims],
            candidates, refused, ranked_by, self.settings.ranking)

    def _candidate(self, uuid, weight):
        record = self.records[uuid]
        option = self._options.get(uuid)
        if uuid in self._abandoned:
            failed = 'it changed under each of its claims (other writers)'
        elif option is None and record.host in self.refusals:
            failed = 'refused when claimed: %s' % self.refusals[record.host]
        else:
            failed = "Nova had no allocation candidate left for it"
        return explain.Candidate(record.host, option, weight, failed)

    def reason(self):
        """Why hosts were refused, for NoValidHost: how many hosts for
        each reason (no host names: the fault is the tenant's to read)."""
        counts = collections.Counter(self.refusals.values())
        return 'OPIE: %s.' % '; '.join(
            '%d host%s: %s' % (n, '' if n == 1 else 's', why)
            for why, n in sorted(counts.items(),
                                 key=lambda item: (-item[1], item[0]))
        ) if counts else ''

    def log_refusals(self):
        """One log line per host that refused the request (the first
        :data:`LOGGED_REFUSALS`), for the operator."""
        hosts = sorted(self.refusals)
        for host in hosts[:LOGGED_REFUSALS]:
            LOG.info('OPIE: %s refused the request: %s', host,
                     self.refusals[host])
        if len(hosts) > LOGGED_REFUSALS:
            LOG.info('OPIE: %d more hosts refused the request (reasons in '
                     'the fault)', len(hosts) - LOGGED_REFUSALS)
