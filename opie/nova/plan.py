"""What one scheduling request has decided so far.

The scheduler serves many requests at once, so nothing about a request is
kept on the manager: ``OpieSchedulerManager`` opens a :class:`Plan` for
each ``select_destinations`` call and makes it current (a context
variable) while Nova's filters and weighers run. OPIE's filter and weighers
read it; with no current plan they are running under the stock
``nova-scheduler`` and fall back to a safe mode that never preempts.

A plan holds one :class:`~opie.nova.hoststate.HostRecord` per candidate
host, follows every placement and claimed victim of the request, caches the
core's verdict on each host until that host changes, and remembers why
hosts were refused so ``NoValidHost`` can say it.
"""
import contextlib
import contextvars
import dataclasses

from opie.core import resources as res
from opie.core import scheduling

_CURRENT = contextvars.ContextVar('opie_plan', default=None)


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


class Plan:
    """One request's hosts, placements and victims.

    :param context: the (admin) RequestContext of the request
    :param request: the core Request
    :param settings: :class:`opie.nova.conf.Settings`
    :param load_instances: callable filling ``preemptibles`` of a list of
        HostRecords (one batch)
    :param may_preempt: callable telling (once) whether this request may
        terminate preemptible instances (normal boots do; moves depend on
        ``[opie] preempt_on_move``; rebuilds never)
    :param now: the time costs are computed at
    """

    def __init__(self, context, request, settings, load_instances,
                 may_preempt, now):
        self.context = context
        self.request = request
        self.settings = settings
        self.now = now
        self._load_instances = load_instances
        # A preemptible request never preempts; a normal one asks once.
        self._may_preempt = False if request.preemptible else None
        self._decide_may_preempt = may_preempt
        self.records = {}           # host uuid -> HostRecord
        self._options = {}          # host uuid -> HostOption or None
        self.refusals = set()       # why hosts were refused
        self.victims_taken = 0
        self.placed = []            # instances Placement holds claims for
        self.claims = []            # (record, victim, claim.Claim)
        self.preemptions = []       # Preemption, to terminate at the end

    # hosts ---------------------------------------------------------------
    def add(self, record):
        self.records[record.uuid] = record

    def record(self, host_state):
        return self.records.get(host_state.uuid)

    @property
    def may_preempt(self):
        if self._may_preempt is None:
            self._may_preempt = bool(self._decide_may_preempt())
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
                self.refusals.add(why)
            self._options[record.uuid] = option
        return self._options[record.uuid]

    def passes(self, host_state):
        return self.option(host_state) is not None

    def fits(self, host_state):
        option = self.option(host_state)
        return option is not None and option.fits

    def _assess(self, record):
        host = record.core_host()
        if (not self.request.preemptible
                and not host.free_full.covers(self.request.resources)
                and not self.may_preempt):
            return None, scheduling.NO_ROOM_FULL
        max_victims = self.settings.max_victims
        if max_victims is not None:
            max_victims -= self.victims_taken
        return scheduling.assess_host(
            self.request, host, self.settings.cost_model, self.now,
            max_victims=max_victims, ranking=self.settings.ranking)

    def _needs_instances(self, record):
        if record.preemptibles is not None:
            return False
        if res.ZERO.covers(record.preemptible_used):
            return False
        if self.settings.ranking == scheduling.ALL_PREEMPTIBLES:
            return True
        if self.request.preemptible:
            return False
        fits = record.free_full().covers(self.request.resources)
        return not fits and self.may_preempt

    def _ensure_instances(self, record):
        """Load preemptibles of every host that needs them, in one batch,
        the first time any of them does."""
        if not self._needs_instances(record):
            return
        self._load_instances([r for r in self.records.values()
                              if self._needs_instances(r)])

    def _changed(self, record, budget_spent=False):
        if budget_spent and self.settings.max_victims is not None:
            # The victim budget is shared by every host.
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

    def take(self, record, victim, claimed):
        """``victim`` on ``record`` is claimed: its room is free."""
        record.preemptibles.remove(victim)
        record.preemptible_used -= victim.resources
        self.victims_taken += 1
        self.claims.append((record, victim, claimed))
        self._changed(record, budget_spent=True)

    def lose(self, record, victim, usages):
        """Another worker took ``victim``; ``usages`` are the host's fresh
        Placement usages, made while an instance of this request is being
        placed there: they count its claim, which :meth:`place` adds.
        The host's preemptibles are read again: the other worker may have
        taken more of them."""
        record.apply_usage(usages)
        if self.request.preemptible:
            record.preemptible_used -= self.request.resources
        else:
            record.normal_used -= self.request.resources
        claimed_here = {v.uuid for r, v, _ in self.claims if r is record}
        self._load_instances([record])
        record.preemptibles = [i for i in record.preemptibles
                               if i.uuid not in claimed_here
                               and i.uuid != victim.uuid]
        self._changed(record)

    def cost_of(self, record, victim):
        return self.settings.cost_model.instance_cost(
            victim, record.core_host(), self.now)

    def preempted(self, record, instance_uuid, victims, cost):
        self.preemptions.append(Preemption(
            record.host, record.nodename, tuple(victims), cost,
            instance_uuid))

    def reason(self):
        """Why hosts were refused, for NoValidHost (no host names)."""
        if not self.refusals:
            return ''
        return 'OPIE: %s.' % '; '.join(sorted(self.refusals))
