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

"""One scheduling decision, end to end (the paper's Algorithms 2 and 6).

Phases, named after what they do:

* **filter**: a preemptible request must fit h_f (it never causes a
  preemption); a normal request must fit h_n, and where it does not fit h_f
  the host must hold an eligible victim set covering the h_f shortfall.
* **score**: every host that passes gets the cost of what would really be
  killed there: the cost of its cheapest sufficient victim set, 0 when the
  request fits. Ranking ``victims`` (the default) orders hosts by that
  score; ranking ``all-preemptibles`` is the paper's literal Algorithm 4,
  which scores a host by the cost of *all* its preemptibles and so picks
  the wrong host in the paper's own Tables 5 and 6. In both, hosts the
  request fits come first (Algorithm 3, overcommit), then hosts whose
  victims are of the lowest tier (a normal request takes from the lowest
  tier first, on every host), and names break ties.
* **select victims**: the chosen host's victim set (:mod:`.victims`),
  under the operator's hard constraints: minimum uptime, tiers and
  preemption budgets. A host they leave without a set is refused with a
  reason that names the constraint.
"""
import dataclasses

from opie.core import resources as res
from opie.core import victims as victims_mod

VICTIMS = 'victims'
ALL_PREEMPTIBLES = 'all-preemptibles'
RANKINGS = (VICTIMS, ALL_PREEMPTIBLES)


@dataclasses.dataclass(frozen=True)
class Request:
    resources: object
    preemptible: bool = False


@dataclasses.dataclass(frozen=True)
class HostOption:
    """A host that passed the filter, with what placing there would kill."""
    host: str
    fits: bool
    victims: tuple
    cost: float
    score: float
    # The highest tier among the victims (0 when the request fits).
    tier: int = 0
    # Project -> vCPU-minutes of budget the victims charge.
    charges: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Decision:
    host: str | None
    victims: tuple
    cost: float
    ranking: list
    reason: str = ''


# Why a host fails the filter, worded for operators.
NO_ROOM_FULL = 'too little free room, counting every instance (h_f)'
NO_ROOM_NORMAL = 'too little room even without its preemptibles (h_n)'
NO_VICTIMS = 'no eligible set of preemptibles frees enough'
TOO_MANY_VICTIMS = 'freeing enough needs more than max_victims instances'
TOO_YOUNG = ('only preemptibles younger than their minimum uptime could '
             'free enough')
OVER_BUDGET = ("only preemptibles whose project's preemption budget is "
               "spent could free enough")


def assess_host(request, host, cost_model, now, max_victims=None,
                ranking=VICTIMS, budgets=None):
    """Filter and score one host: ``(HostOption, '')`` or ``(None, why)``.
    ``budgets``: a :class:`~.budgets.Budgets`, or None for none."""
    if ranking not in RANKINGS:
        raise ValueError('unknown ranking %r (choose from %s)'
                         % (ranking, ', '.join(RANKINGS)))
    wanted = request.resources
    free = host.free_full
    fits = free.covers(wanted)
    if request.preemptible:
        if not fits:
            return None, NO_ROOM_FULL
        return _option(host, True, None, cost_model, now, ranking), ''
    if not host.free_normal.covers(wanted):
        return None, NO_ROOM_NORMAL
    if fits:
        return _option(host, True, None, cost_model, now, ranking), ''
    shortfall = free.shortfall(wanted)
    costs = cost_model.costs(host.preemptibles, host, now)
    selection = victims_mod.select(shortfall, host.preemptibles, costs,
                                   max_victims, host.capacity, now, budgets)
    if selection is None:
        return None, _why_no_victims(shortfall, host, costs, now,
                                     max_victims, budgets)
    offset = cost_model.offset(shortfall, host)
    if offset:
        selection = dataclasses.replace(selection,
                                        cost=selection.cost + offset)
    return _option(host, False, selection, cost_model, now, ranking,
                   costs), ''


def refusal_by_usage(request, capacity, normal_used, preemptible_used):
    """Why :func:`assess_host` refuses a host whatever its preemptible
    instances are, told from Placement's usages alone; '' when the
    instances may decide. A host so refused needs neither an instance read
    nor a victim search.

    Whatever instances are listed, h_n's free room is at most ``capacity
    - normal_used`` (preemptible usage no listed instance explains counts
    as used in h_n) and h_f's at most that less ``preemptible_used``
    (listed instances beyond it count as used). A host whose preemptible
    usage cannot cover the h_f shortfall in some dimension is one whose
    h_n lacks room in that dimension: :func:`assess_host` refuses it for
    h_n, before any search. Nothing else about a host's outcome follows
    from its usages: whether an eligible set exists, its tier and its cost
    are the instances' to tell.
    """
    free_normal = capacity - normal_used
    if request.preemptible:
        if not (free_normal - preemptible_used).covers(request.resources):
            return NO_ROOM_FULL
        return ''
    if not free_normal.covers(request.resources):
        return NO_ROOM_NORMAL
    return ''


def _why_no_victims(shortfall, host, costs, now, max_victims, budgets):
    """Which constraint left the host without a victim set: the ones
    whose lifting alone would give a set (any of them is then what stands
    in the way), else all of them together. So a tenant told to wait for
    a minimum uptime would be served once it has passed."""
    eligible = [i for i in host.preemptibles if i.preemptible and i.eligible]
    if not res.total(i.resources for i in eligible).covers(shortfall):
        return NO_VICTIMS
    young = any(i.protected(now) for i in eligible)
    grown = [dataclasses.replace(i, minimum_uptime=0.0)
             for i in host.preemptibles] if young else host.preemptibles
    # (name, reason, the arguments of select with it lifted)
    lifts = [(TOO_YOUNG, (grown, max_victims, budgets))] if young else []
    if max_victims is not None:
        lifts.append((TOO_MANY_VICTIMS, (host.preemptibles, None, budgets)))
    if budgets is not None:
        lifts.append((OVER_BUDGET, (host.preemptibles, max_victims, None)))
    if not lifts:
        return NO_VICTIMS
    alone = [why for why, (instances, cap, limits) in lifts
             if victims_mod.select(shortfall, instances, costs, cap,
                                   host.capacity, now, limits) is not None]
    if len(alone) == 1:
        return alone[0]
    return ('freeing enough breaks %s' % (' or ' if alone else ' and ').join(
        _BROKEN[why] for why in (alone or [why for why, _ in lifts])))


# A constraint as a combined refusal names it.
_BROKEN = {TOO_YOUNG: 'the minimum uptime of younger preemptibles',
           TOO_MANY_VICTIMS: 'max_victims',
           OVER_BUDGET: "a project's preemption budget"}


def _option(host, fits, selection, cost_model, now, ranking, costs=None):
    """``costs``: of the host's preemptibles, when already computed."""
    selection = selection or victims_mod.Selection((), 0.0, res.ZERO)
    if ranking == ALL_PREEMPTIBLES:
        if costs is None:
            costs = cost_model.costs(host.preemptibles, host, now)
        score = sum(costs)
    else:
        score = selection.cost
    return HostOption(host.name, fits, selection.victims, selection.cost,
                      score, selection.tier, selection.charges)


def order(option):
    """Sort key of hosts, best first: fits, lowest tier, score, name."""
    return (not option.fits, option.tier, option.score, option.host)


def schedule(request, hosts, cost_model, now, max_victims=None,
             ranking=VICTIMS, budgets=None):
    """Pick the best host and the victims to kill there.

    A :class:`Decision` with ``host`` None and a one-line ``reason`` when no
    host can take the request.
    """
    options, rejected = [], {}
    for host in hosts:
        option, why = assess_host(request, host, cost_model, now,
                                  max_victims, ranking, budgets)
        if option is None:
            rejected.setdefault(why, []).append(host.name)
        else:
            options.append(option)
    if not options:
        return Decision(None, (), 0.0, [], _no_host_reason(
            request, len(hosts), rejected))
    options.sort(key=order)
    best = options[0]
    return Decision(best.host, best.victims, best.cost, options)


def _no_host_reason(request, host_count, rejected):
    kind = 'preemptible' if request.preemptible else 'normal'
    if not host_count:
        return 'no host in the snapshot'
    parts = ['%d %s: %s' % (len(names),
                            'host' if len(names) == 1 else 'hosts', why)
             for why, names in sorted(rejected.items())]
    return 'no host can take the %s request (%s): %s' % (
        kind, request.resources, '; '.join(parts))
