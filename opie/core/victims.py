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

"""Victim selection: the cheapest set of preemptibles that makes room.

The paper's Algorithm 5 tries every combination of a host's preemptible
instances and keeps the cheapest one whose freed resources cover what the
request lacks: 2^k subsets. This module finds the same optimum without
enumerating them: instances with the same resource vector are
interchangeable but for their cost, so the search is over how many of
each vector to take, depth first with a lower bound, seeded by a greedy
set. The operator's terms are hard constraints no cost outweighs: the
minimum uptime, the tiers (the lowest highest tier first) and the
projects' preemption budgets (:mod:`.budgets`). Past :data:`MAX_NODES`
the search keeps the best set found, and says so. :func:`brute_force` is
the literal algorithm, the reference the search is proven equal to.

How the search and its bounds work: ``doc/source/design/index.rst``,
"Modules in detail".
"""
import dataclasses
import itertools
import math
import operator

from opie.core import resources as res

# Relative tolerance under which two float costs are a tie.
_EPS = 1e-9
# Nodes one search may visit. Budgets make the problem a knapsack with
# one constraint per project: its bounds keep random and realistic pools
# to a few hundred nodes, but a crafted pool can still need exponentially
# many. Past this many the search stops with the best set found so far,
# which breaks no constraint (``Selection.exact`` is then False), or none.
MAX_NODES = 5000


@dataclasses.dataclass(frozen=True)
class Selection:
    victims: tuple
    cost: float
    freed: res.Resources
    # The highest tier among the victims (0 when there are none).
    tier: int = 0
    # Project -> vCPU-minutes the set charges (empty without budgets).
    charges: dict = dataclasses.field(default_factory=dict)
    # False when the search stopped at MAX_NODES: the set keeps every
    # constraint but a cheaper one may exist.
    exact: bool = True


def label(instance):
    """How an instance is named in ties and reports."""
    return instance.name or instance.uuid


def _tolerance(cost):
    return _EPS * max(1.0, abs(cost))


def _leftover(freed, shortfall, scale):
    return (freed - shortfall).share(scale)


def _pool_total(pool):
    """The default scale of leftover: all the pool's resources."""
    return res.total(p[2].resources for p in pool)


def _better(cost, key, best_cost, best_key):
    """Is (cost, key) strictly better than the best so far?"""
    if best_cost is None:
        return True
    tol = _tolerance(best_cost)
    if cost < best_cost - tol:
        return True
    return cost <= best_cost + tol and key < best_key


# The pool's order: cheapest, then by name.
_COST_THEN_NAME = operator.itemgetter(0, 1)


def _pool(candidates, costs, now, budgets):
    """Eligible preemptibles as ``(cost, name, instance, charge)``,
    cheapest (then name) first: none younger than its minimum uptime, none
    whose charge alone breaks its project's budget."""
    if now is None and (budgets is not None or any(
            i.minimum_uptime for i in candidates)):
        raise ValueError('minimum uptimes and budgets need the time of the '
                         'decision (now)')
    pool = []
    for instance, cost in zip(candidates, costs):
        if not (instance.preemptible and instance.eligible):
            continue
        if cost < 0 or math.isnan(cost):
            raise ValueError('preemption cost of %s is %r: costs must be '
                             'numbers >= 0' % (label(instance), cost))
        # Asked only where a minimum uptime is set (protected() says no
        # at once otherwise), in protected()'s own terms.
        if (not instance.minimum_uptime <= 0 and now is not None
                and instance.protected(now)):
            continue
        charge = 0
        if budgets is not None:
            charge = budgets.charge(instance, now)
            limit = budgets.limit(instance.project_id)
            if limit is not None and charge > limit:
                continue
        pool.append((cost, label(instance), instance, charge))
    pool.sort(key=_COST_THEN_NAME)
    return pool


def _constrained(pool, budgets):
    """Project -> limit, for the projects whose budget the pool's
    instances together would break (the only ones a set can break)."""
    if budgets is None:
        return {}
    charged = {}
    for _, _, instance, charge in pool:
        project = instance.project_id
        charged[project] = charged.get(project, 0) + charge
    return {project: budgets.limit(project)
            for project, total in charged.items()
            if budgets.limit(project) is not None
            and total > budgets.limit(project)}


def _fits_budgets(entries, constrained):
    spent = {}
    for _, _, instance, charge in entries:
        project = instance.project_id
        if project in constrained:
            spent[project] = spent.get(project, 0) + charge
            if spent[project] > constrained[project]:
                return False
    return True


def _selection(entries, cost, budgets, exact=True):
    charges = {}
    if budgets is not None:
        for _, _, instance, charge in entries:
            charges[instance.project_id] = (
                charges.get(instance.project_id, 0) + charge)
    return Selection(tuple(e[2] for e in entries), cost,
                     res.total(e[2].resources for e in entries),
                     max((e[2].tier for e in entries), default=0), charges,
                     exact)


def _knapsack_bound(groups, dim, budget):
    """At most how much of dimension ``dim`` the instances of ``groups``
    (one project's) free with charges of at most ``budget``: the
    fractional knapsack's optimum, rounded down where amounts are whole
    (the whole optimum is then a whole number no greater)."""
    free = 0.0
    ranked = []
    for group in groups:
        amount = group.vector[dim]
        if not amount:
            continue
        if not group.charge:
            free += amount * len(group.members)
        else:
            ranked.append((amount / group.charge, amount, group))
    ranked.sort(key=lambda item: item[0], reverse=True)
    for _, amount, group in ranked:
        if budget <= 0:
            break
        take = min(len(group.members), budget / group.charge)
        free += amount * take
        budget -= take * group.charge
    whole = all(float(g.vector[dim]).is_integer() for g in groups)
    return math.floor(free + _EPS) if whole else free


class _GaveUp(Exception):
    """The search visited MAX_NODES nodes."""


def _tiers(pool):
    """``(tier, the pool's instances of that tier or lower)``, lowest
    tier first."""
    for tier in sorted({entry[2].tier for entry in pool}):
        yield tier, [entry for entry in pool if entry[2].tier <= tier]


def brute_force(shortfall, candidates, costs, max_victims=None, scale=None,
                now=None, budgets=None):
    """Algorithm 5 as written, every subset, with the constraints checked
    set by set. Exponential; reference only."""
    pool = _pool(candidates, costs, now, budgets)
    if shortfall.is_zero():
        return Selection((), 0.0, res.ZERO)
    scale = scale or _pool_total(pool)
    constrained = _constrained(pool, budgets)
    limit = len(pool) if max_victims is None else min(max_victims, len(pool))
    best = best_cost = best_key = best_tier = None
    for size in range(1, limit + 1):
        for combo in itertools.combinations(pool, size):
            freed = res.total(p[2].resources for p in combo)
            if (not freed.covers(shortfall)
                    or not _fits_budgets(combo, constrained)):
                continue
            tier = max(p[2].tier for p in combo)
            if best_tier is not None and tier > best_tier:
                continue
            if best_tier is not None and tier < best_tier:
                best_cost = None
            cost = sum(p[0] for p in combo)
            key = (size, _leftover(freed, shortfall, scale),
                   tuple(sorted(p[1] for p in combo)))
            if _better(cost, key, best_cost, best_key):
                best, best_cost, best_key, best_tier = combo, cost, key, tier
    if best is None:
        return None
    return _selection(best, best_cost, budgets)


class _Group:
    """Instances interchangeable but for their cost, cheapest first: one
    resource vector (and, under a budget they could break, one project
    and one charge)."""

    def __init__(self, vector, members, project=None, charge=0):
        self.vector = vector
        self.members = members          # [(cost, name, instance, charge)]
        self.project = project          # None: no budget to watch
        self.charge = charge
        self.costs = [m[0] for m in members]
        # The cost of the cheapest j, for every j.
        self.prefix = list(itertools.accumulate(self.costs, initial=0.0))


def select(shortfall, candidates, costs, max_victims=None, scale=None,
           now=None, budgets=None):
    """The best set of eligible preemptibles covering ``shortfall``.

    ``candidates`` are core Instances and ``costs`` their preemption costs
    (same order, each >= 0); normal and ineligible instances are skipped.
    ``max_victims`` caps the set's size and ``scale`` (usually the host's
    capacity) normalises leftover in tie-breaks. ``now`` is the time of
    the decision (needed for minimum uptimes and budgets), ``budgets`` a
    :class:`~.budgets.Budgets` or None. Returns a :class:`Selection`
    (empty when nothing is lacking): of the lowest highest tier, then the
    cheapest; or None when no allowed set covers the shortfall.
    """
    pool = _pool(candidates, costs, now, budgets)
    if shortfall.is_zero():
        return Selection((), 0.0, res.ZERO)
    if max_victims is not None and max_victims <= 0:
        return None
    scale = scale or _pool_total(pool)
    for _, tiered in _tiers(pool):
        found = (_lone_victim(shortfall, tiered, scale, budgets)
                 or _Search(shortfall, tiered, max_victims, scale,
                            budgets).run())
        if found is not None:
            return found
    return None


def _lone_victim(shortfall, pool, scale, budgets):
    """The answer when one instance is provably enough, else None.

    Any set of two or more victims costs at least the two cheapest costs
    of the pool together; a lone victim costing no more wins (on a tie it
    has fewer victims). Among lone victims of the cheapest cost, the tie
    break is leftover, then name. Most requests are one flavor, so most
    hosts are settled here without a search. (Each instance of the pool
    fits its budget alone.)
    """
    best = None
    for entry in pool:       # cheapest first
        cost, name, instance, _ = entry
        if best is not None and cost > best[0] + _tolerance(best[0]):
            break
        if instance.resources.covers(shortfall):
            key = (_leftover(instance.resources, shortfall, scale), name)
            if best is None or key < best[1]:
                best = (cost, key, entry)
    if best is None:
        return None
    cost, _, entry = best
    if len(pool) > 1 and cost > pool[0][0] + pool[1][0] + _tolerance(cost):
        return None
    return _selection((entry,), cost, budgets)


class _Search:
    def __init__(self, shortfall, pool, max_victims, scale, budgets):
        self.shortfall = shortfall
        self.scale = scale
        self.pool = pool
        self.budgets = budgets
        self.max_victims = len(pool) if max_victims is None else max_victims
        self.left = _constrained(pool, budgets)
        by_key = {}
        for entry in pool:
            by_key.setdefault(self._group_key(entry), []).append(entry)
        # Big vectors first: they cover the need with few victims, which
        # finds good sets early and tightens the bound.
        self.groups = sorted(
            (_Group(key[0], members, *key[1:])
             for key, members in by_key.items()),
            key=lambda g: g.vector.share(scale), reverse=True)
        self.rank = {(g.vector, g.project, g.charge): gi
                     for gi, g in enumerate(self.groups)}
        # Constrained project -> indexes of its groups.
        self.budgeted = {}
        for gi, group in enumerate(self.groups):
            if group.project is not None:
                self.budgeted.setdefault(group.project, []).append(gi)
        self._prepare_bounds()
        self.best_counts = self.best_cost = self.best_key = None
        self.limit = math.inf
        self.nodes = 0

    def _group_key(self, entry):
        _, _, instance, charge = entry
        if instance.project_id in self.left:
            return (instance.resources, instance.project_id, charge)
        return (instance.resources, None, 0)

    def _prepare_bounds(self):
        """Per suffix of groups: the largest vector per dimension, the
        total, and the cost of its m cheapest instances for every m."""
        n = len(self.groups)
        self.suffix_max = [res.ZERO] * (n + 1)
        self.suffix_total = [res.ZERO] * (n + 1)
        # The total of the groups no budget constrains.
        self.suffix_free = [res.ZERO] * (n + 1)
        self.suffix_cheapest = [[0.0]] * (n + 1)
        costs = []
        for gi in range(n - 1, -1, -1):
            group = self.groups[gi]
            cpu, ram, disk = group.vector
            big_cpu, big_ram, big_disk = self.suffix_max[gi + 1]
            self.suffix_max[gi] = (cpu if cpu > big_cpu else big_cpu,
                                   ram if ram > big_ram else big_ram,
                                   disk if disk > big_disk else big_disk)
            size = len(group.members)
            all_cpu, all_ram, all_disk = self.suffix_total[gi + 1]
            self.suffix_total[gi] = res.Resources(
                all_cpu + cpu * size, all_ram + ram * size,
                all_disk + disk * size)
            self.suffix_free[gi] = self.suffix_free[gi + 1] + (
                res.ZERO if group.project is not None
                else group.vector * size)
            # Both runs are sorted already, which makes this merge cheap.
            costs = sorted(costs + group.costs)
            self.suffix_cheapest[gi] = list(itertools.accumulate(
                costs, initial=0.0))
        if self.budgeted:
            # Per suffix, its instances as (cost, project, charge),
            # cheapest first: for the cost bound under budgets.
            self.suffix_members = [sorted(
                ((m[0], g.project, g.charge)
                 for g in self.groups[gi:] for m in g.members),
                key=lambda member: member[0])
                for gi in range(n + 1)]

    def _min_more(self, need, gi):
        """Fewest instances of groups[gi:] that could cover ``need``."""
        m = 1
        for want, most in zip(need, self.suffix_max[gi]):
            if want > 0:
                if most <= 0:
                    return None
                fewest = math.ceil(want / most - _EPS)
                if fewest > m:
                    m = fewest
        return m

    def run(self):
        if not self.suffix_total[0].covers(self.shortfall):
            return None
        self._seed_with_greedy()
        exact = True
        try:
            self._dfs(0, *self.shortfall, 0.0, 0, [])
        except _GaveUp:
            exact = False
        if self.best_counts is None:
            return None
        victims = []
        for group, count in zip(self.groups, self.best_counts):
            victims.extend(e for e in group.members[:count])
        victims.sort(key=lambda e: (e[0], e[1]))
        return _selection(victims, self.best_cost, self.budgets, exact)

    def _cheapest_within_budgets(self, gi, m):
        """A lower bound on the cost of m more victims from groups[gi:]:
        the cheapest m when each project gives at most as many as its
        budget left pays for (its instances of smallest charge)."""
        charges = {}
        for _, project, charge in self.suffix_members[gi]:
            if project is not None:
                charges.setdefault(project, []).append(charge)
        caps = {}
        for project, found in charges.items():
            left, cap = self.left[project], 0
            for charge in sorted(found):
                if charge > left:
                    break
                left -= charge
                cap += 1
            caps[project] = cap
        total, taken = 0.0, 0
        for cost, project, _ in self.suffix_members[gi]:
            if taken == m:
                return total
            if project is not None:
                if not caps[project]:
                    continue
                caps[project] -= 1
            total += cost
            taken += 1
        return total if taken == m else math.inf

    def _budgets_allow(self, gi, need):
        """Could groups[gi:] cover ``need`` within the budgets left? The
        groups no budget constrains count whole, each constrained
        project's at most its knapsack bound."""
        room = list(self.suffix_free[gi])
        for project, indexes in self.budgeted.items():
            groups = [self.groups[i] for i in indexes if i >= gi]
            if groups:
                for dim in range(3):
                    if need[dim] > room[dim]:
                        room[dim] += _knapsack_bound(groups, dim,
                                                     self.left[project])
        return all(have >= want for have, want in zip(room, need))

    def _key(self, counts):
        """Tie-break key of the set ``counts`` describes."""
        freed = res.Resources(*(sum(g.vector[d] * c for g, c in
                                    zip(self.groups, counts))
                                for d in range(3)))
        names = sorted(e[1] for g, c in zip(self.groups, counts)
                       for e in g.members[:c])
        return (sum(counts), _leftover(freed, self.shortfall, self.scale),
                tuple(names))

    def _consider(self, counts, cost):
        """Record the set given by ``counts`` if it beats the best."""
        if cost > self.limit:
            return
        counts = tuple(counts) + (0,) * (len(self.groups) - len(counts))
        if (self.best_cost is not None
                and cost >= self.best_cost - _tolerance(self.best_cost)):
            # A tie on cost: only now is the tie-break key worth its price.
            if self.best_key is None:
                self.best_key = self._key(self.best_counts)
            key = self._key(counts)
            if key >= self.best_key:
                return
        else:
            key = None
        self.best_counts, self.best_cost, self.best_key = counts, cost, key
        # Sets dearer than this can no longer win, nor tie.
        self.limit = cost + _tolerance(cost)

    def _seed_with_greedy(self):
        """Cheapest instances first until covered: an upper bound."""
        counts = [0] * len(self.groups)
        need = self.shortfall
        left = dict(self.left)
        taken = 0
        for entry in self.pool:
            if taken == self.max_victims:
                return
            key = self._group_key(entry)
            if key[1] is not None:
                if left[key[1]] < key[2]:
                    continue
                left[key[1]] -= key[2]
            counts[self.rank[key]] += 1
            taken += 1
            need = need - entry[2].resources
            if res.ZERO.covers(need):
                self._consider(counts, sum(
                    g.prefix[c] for g, c in zip(self.groups, counts)))
                return

    def _dfs(self, gi, need_cpu, need_ram, need_disk, cost, taken, counts):
        """Try each count of groups[gi], cheapest first; the need is
        passed as three numbers because this is the hot loop."""
        if gi == len(self.groups):
            return
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _GaveUp()
        have_cpu, have_ram, have_disk = self.suffix_total[gi]
        if (have_cpu < need_cpu or have_ram < need_ram
                or have_disk < need_disk):
            return
        if self.budgeted and not self._budgets_allow(
                gi, (need_cpu, need_ram, need_disk)):
            return
        more = self._min_more((need_cpu, need_ram, need_disk), gi)
        if more is None or taken + more > self.max_victims:
            return
        if cost + self.suffix_cheapest[gi][more] > self.limit:
            return
        if self.budgeted and (cost + self._cheapest_within_budgets(gi, more)
                              > self.limit):
            return
        group = self.groups[gi]
        cpu, ram, disk = group.vector
        prefix = group.prefix
        most = min(len(group.members), self.max_victims - taken)
        project, charge = group.project, group.charge
        if project is not None and charge:
            # What the project's budget still allows of this group.
            most = min(most, self.left[project] // charge)
        for c in range(most + 1):
            total_cost = cost + prefix[c]
            if total_cost > self.limit:
                break
            counts.append(c)
            rest_cpu = need_cpu - c * cpu
            rest_ram = need_ram - c * ram
            rest_disk = need_disk - c * disk
            if rest_cpu <= 0 and rest_ram <= 0 and rest_disk <= 0:
                self._consider(counts, total_cost)
                counts.pop()
                break
            if project is not None:
                self.left[project] -= c * charge
            self._dfs(gi + 1, rest_cpu, rest_ram, rest_disk, total_cost,
                      taken + c, counts)
            if project is not None:
                self.left[project] += c * charge
            counts.pop()
