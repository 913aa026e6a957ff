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

"""Preemption budgets: each project's ledger of charges, in Placement.

A project's preemption budget (``[opie] preemption_budget_vcpu_hours``, or
its own, set with ``opie-manage budget``) bounds the preempted vCPU-hours
its servers may lose in a rolling window (``[opie]
preemption_budget_window``). The victim search treats it as a hard
constraint (:mod:`opie.core.budgets`); this module keeps the ledger it is
checked against: one resource provider per project whose inventory is
the budget, and one consumer per victim's charge, written in the same
``POST /allocations`` as the claim that takes the victim. Placement checks
capacity inside that write's transaction, so the budget holds however
many schedulers preempt at once. The leader (:class:`Keeper`) deletes
expired charges and brings the ledgers that follow the default to it.

The ledger, the window, the default and the edges:
``doc/source/design/index.rst``, "Modules in detail".
"""
import dataclasses
import datetime
import uuid

from oslo_log import log as logging

from opie.core import host as core_host
from opie.nova.request import cas

LOG = logging.getLogger(__name__)
RESOURCE_CLASS = 'CUSTOM_OPIE_PREEMPTED_VCPU_MINUTES'
TRAIT = 'CUSTOM_OPIE_BUDGET'
SET_TRAIT = 'CUSTOM_OPIE_BUDGET_SET'
# Which of the two Placement knows (it refuses to list by one it does
# not).
TRAITS_URL = '/traits?name=in:%s,%s' % (TRAIT, SET_TRAIT)
NAME_PREFIX = 'opie-budget-'
# Charges' owner in Placement (they are nobody's instance).
PROJECT_ID = 'opie-budget'
EXPIRES_PREFIX = 'opie-charge-until-'
EXPIRES_FORMAT = '%Y-%m-%dT%H:%M:%SZ'
# Traits as filters (1.18), forbidden ones (1.22), an inventory wholly
# reserved (1.26), consumer generations (1.28).
VERSION = '1.28'
# Writes of a provider's traits or inventory tried at the generations
# read before giving up (each refusal: another writer moved it).
ATTEMPTS = 5


class LedgerError(Exception):
    """Placement answered a ledger's read or write unexpectedly."""


def provider_name(project_id):
    return NAME_PREFIX + project_id


def provider_uuid(project_id):
    """The uuid of ``project_id``'s ledger, the same in every process."""
    return str(uuid.uuid5(cas.NAMESPACE, provider_name(project_id)))


def charge_consumer(victim_uuid, instance_uuid):
    """The consumer charging ``victim_uuid``'s preemption for
    ``instance_uuid``: derived, so that a give-back finds it."""
    return str(uuid.uuid5(cas.NAMESPACE, 'opie-budget-charge:%s:%s'
                          % (victim_uuid, instance_uuid)))


def inventory(minutes):
    """The inventory record of a budget of ``minutes`` vCPU-minutes."""
    if minutes == 0:
        return {'total': 1, 'reserved': 1}
    return {'total': minutes, 'reserved': 0}


def capacity(inventories):
    """The budget (vCPU-minutes) an ``inventories`` dict holds, or None if
    it holds none."""
    record = (inventories or {}).get(RESOURCE_CLASS)
    if record is None:
        return None
    return int(core_host.inventory_capacity(record))


def expires(user_id):
    """When a charge whose consumer's user is ``user_id`` expires (aware
    UTC), or None if it does not say."""
    if not (user_id or '').startswith(EXPIRES_PREFIX):
        return None
    try:
        moment = datetime.datetime.strptime(
            user_id[len(EXPIRES_PREFIX):], EXPIRES_FORMAT)
    except ValueError:
        return None
    return moment.replace(tzinfo=datetime.timezone.utc)


@dataclasses.dataclass(frozen=True)
class Charge:
    """What one victim's preemption costs its project's budget."""
    victim_uuid: str
    project_id: str
    minutes: int


def entries(instance_uuid, charges, until):
    """The part of a ``POST /allocations`` that writes ``charges`` (taken
    for ``instance_uuid``): each a new consumer holding its minutes on its
    project's ledger until ``until``."""
    user = EXPIRES_PREFIX + core_host.utc(until).strftime(EXPIRES_FORMAT)
    return {charge_consumer(c.victim_uuid, instance_uuid): {
        'allocations': {provider_uuid(c.project_id): {'resources': {
            RESOURCE_CLASS: c.minutes}}},
        'consumer_generation': None,
        'project_id': PROJECT_ID, 'user_id': user} for c in charges}


def removed(body):
    """The part of a write that deletes a consumer read as ``body``
    (``GET /allocations/{uuid}``), at the generation read."""
    return {'allocations': {}, 'consumer_generation':
            body['consumer_generation'], 'project_id': body['project_id'],
            'user_id': body['user_id']}


# Placement -----------------------------------------------------------------
def _global_id(context):
    return getattr(context, 'global_id', None)


def get(client, context, url):
    """The decoded body of a GET, or None on 404."""
    resp = client.get(url, version=VERSION,
                      global_request_id=_global_id(context))
    if resp.status_code == 404:
        return None
    if resp.status_code != 200:
        raise LedgerError('GET %s: %s %s' % (url, resp.status_code,
                                             resp.text))
    return resp.json()


def _send(client, context, verb, url, body=None, ok=(200, 201, 204)):
    """PUT, POST or DELETE: the status (one of ``ok``, or 409)."""
    kw = dict(version=VERSION, global_request_id=_global_id(context))
    method = getattr(client, verb)
    resp = method(url, **kw) if verb == 'delete' else method(url, body,
                                                             **kw)
    if resp.status_code not in tuple(ok) + (409,):
        raise LedgerError('%s %s: %s %s' % (verb.upper(), url,
                                            resp.status_code, resp.text))
    return resp.status_code


def read(client, context, project_id):
    """``(budget, used)`` of ``project_id``'s ledger in vCPU-minutes;
    budget None if it has no ledger (or no budget in it)."""
    base = '/resource_providers/%s' % provider_uuid(project_id)
    inventories = get(client, context, base + '/inventories')
    budget = capacity(inventories and inventories['inventories'])
    if budget is None:
        return None, 0
    usages = get(client, context, base + '/usages') or {'usages': {}}
    return budget, usages['usages'].get(RESOURCE_CLASS, 0)


def write(client, context, project_id, minutes, explicit, replace=True):
    """Create or update ``project_id``'s ledger: ``minutes`` vCPU-minutes,
    set by an operator (``explicit``) or the default. Unless ``replace``,
    an existing budget is kept (a scheduler writing the default never
    overwrites one written meanwhile). False if Placement kept refusing
    (another writer kept changing it)."""
    uuid_ = provider_uuid(project_id)
    base = '/resource_providers/%s' % uuid_
    for name in (TRAIT, SET_TRAIT):
        _send(client, context, 'put', '/traits/%s' % name)
    _send(client, context, 'put', '/resource_classes/%s' % RESOURCE_CLASS)
    if get(client, context, base) is None:
        # 409: another process created it meanwhile.
        _send(client, context, 'post', '/resource_providers',
              {'name': provider_name(project_id), 'uuid': uuid_})
    traits = {TRAIT, SET_TRAIT} if explicit else {TRAIT}
    if not _retry(lambda: _put_traits(client, context, base, traits,
                                      replace)):
        raise LedgerError('ledger of project %s: its traits kept changing'
                          % project_id)
    return _retry(lambda: _put_inventory(client, context, base, minutes,
                                         replace))


def _retry(attempt):
    """Call ``attempt()`` (True done, False refused at the generation
    read, None nothing to do) until it is not refused; False if it always
    was."""
    for _ in range(ATTEMPTS):
        if attempt() is not False:
            return True
    return False


def _put_traits(client, context, base, traits, replace):
    current = get(client, context, base + '/traits')
    if set(current['traits']) == traits or (
            not replace and TRAIT in current['traits']):
        return None
    return _send(client, context, 'put', base + '/traits', {
        'traits': sorted(traits), 'resource_provider_generation':
        current['resource_provider_generation']}) != 409


def _put_inventory(client, context, base, minutes, replace):
    current = get(client, context, base + '/inventories')
    held = capacity(current['inventories'])
    if held == minutes or (held is not None and not replace):
        return None
    # The whole set (a ledger holds nothing else): PUT of one class only
    # updates an inventory that exists.
    return _send(client, context, 'put', base + '/inventories', {
        'inventories': {RESOURCE_CLASS: inventory(minutes)},
        'resource_provider_generation':
        current['resource_provider_generation']}) != 409


class Traits:
    """Whether the ledgers' traits exist, as a scheduler process last
    found. Once they do, :func:`ledgers` lists by them at once: the
    traits are written with the first ledger and deleted only by a
    rollback, after which Placement refuses the listing once (read as no
    ledger) and the process asks first again."""

    def __init__(self):
        self.seen = False


def ledgers(client, context, explicit=None, traits=None):
    """``{provider uuid: project id}`` of every ledger (only those set by
    an operator if ``explicit``, only the default's if False). Placement
    refuses to list by a trait it does not know, so unless ``traits``
    (:class:`Traits`) has seen them, it is asked first whether
    :data:`TRAIT` exists: if not, no ledger was ever written (the first
    writes the traits), and no listing is refused (each refusal would be
    an error in Placement's log)."""
    if traits is None or not traits.seen:
        if TRAIT not in get(client, context, TRAITS_URL)['traits']:
            return {}
        if traits is not None:
            traits.seen = True
    wanted = {None: TRAIT, True: SET_TRAIT,
              False: '%s,!%s' % (TRAIT, SET_TRAIT)}[explicit]
    url = '/resource_providers?required=%s' % wanted
    resp = client.get(url, version=VERSION,
                      global_request_id=_global_id(context))
    if resp.status_code == 400:
        # A trait it does not know: deleted since it was seen (a
        # rollback), or the first ledger's write is half-way.
        if traits is not None:
            traits.seen = False
        return {}
    if resp.status_code != 200:
        raise LedgerError('GET %s: %s %s' % (url, resp.status_code,
                                             resp.text))
    return {p['uuid']: p['name'][len(NAME_PREFIX):]
            for p in resp.json()['resource_providers']
            if p['name'].startswith(NAME_PREFIX)}


def unset(client, context, project_id):
    """``project_id`` follows the default again: its ledger deleted, or,
    while it holds charges, kept for them without :data:`SET_TRAIT` (the
    lease holder brings it to the default). The vCPU-minutes still
    charged, or None if it had no budget of its own."""
    base = '/resource_providers/%s' % provider_uuid(project_id)
    if provider_uuid(project_id) not in ledgers(client, context,
                                                explicit=True):
        return None
    _retry(lambda: _put_traits(client, context, base, {TRAIT}, True))
    _, used = read(client, context, project_id)
    if not used and _send(client, context, 'delete', base) != 409:
        return 0
    # 409: charged meanwhile; its charges keep it.
    return read(client, context, project_id)[1]


@dataclasses.dataclass(frozen=True)
class Budget:
    """A ledger as ``opie-manage budget list`` shows it (vCPU-minutes)."""
    project_id: str
    explicit: bool
    budget: int | None
    spent: int

    @property
    def remaining(self):
        return None if self.budget is None else max(0,
                                                    self.budget - self.spent)


def listing(client, context):
    """Every ledger, by project."""
    explicit = ledgers(client, context, explicit=True)
    found = []
    for uuid_, project in sorted(ledgers(client, context).items(),
                                 key=lambda item: item[1]):
        budget, spent = read(client, context, project)
        found.append(Budget(project, uuid_ in explicit, budget, spent))
    return found


# One request -----------------------------------------------------------
class Remaining:
    """What each project has left, as one scheduling request knows it.

    Read lazily, the first time the request may charge anyone: the list
    of ledgers (one GET, and one before it, whether their trait exists,
    until the worker has seen it), then, once per project the request may
    charge that has one, its inventory and usage (two GETs); a project
    without one has the whole default. Kept up to date with the request's own
    charges; read again after a refused write (:meth:`forget`).

    :param default: the default budget in vCPU-minutes, or None
    :param traits: the scheduler process's :class:`Traits`, or None
    """

    def __init__(self, client, context, default, traits=None):
        self._client = client
        self._context = context
        self._default = default
        self._traits = traits
        self._left = {}       # project -> vCPU-minutes left, or None
        self._ledger = set()  # projects whose ledger holds a budget
        self._listed = None   # projects with a ledger, once listed

    @property
    def unlimited(self):
        """Is it known that no project has a budget (no default, and no
        ledger when they were listed)? Then nothing needs asking."""
        return self._default is None and self._listed == set()

    def of(self, projects):
        """``{project: vCPU-minutes left}`` of those of ``projects`` that
        have a budget (reading those not known yet)."""
        unknown = set(projects) - set(self._left)
        if unknown and self._listed is None:
            self._listed = set(ledgers(self._client, self._context,
                                       traits=self._traits).values())
        for project in unknown:
            if not project:
                # A row without its owner (none in Nova): never charged.
                self._left[project] = None
                continue
            if project not in self._listed:
                self._left[project] = self._default
                continue
            budget, used = read(self._client, self._context, project)
            if budget is None:
                self._left[project] = self._default
            else:
                self._ledger.add(project)
                self._left[project] = max(0, budget - used)
        return {p: self._left[p] for p in projects
                if self._left[p] is not None}

    def spend(self, charges):
        """The request's claim committed ``charges`` (project ->
        vCPU-minutes)."""
        for project, minutes in charges.items():
            self._left[project] = max(0, self._left[project] - minutes)

    def forget(self, projects):
        """A write charging ``projects`` was refused: read them again."""
        for project in projects:
            self._left.pop(project, None)
            self._ledger.discard(project)
            # Another worker may have written its ledger since the list.
            self._listed.add(project)

    def ensure(self, projects):
        """Before a write charges ``projects``: those that had no ledger
        get one holding the default."""
        for project in set(projects) - self._ledger:
            write(self._client, self._context, project, self._default,
                  explicit=False, replace=False)
            self._ledger.add(project)


# The lease holder ------------------------------------------------------
class Keeper:
    """The lease holder's care of the ledgers (:meth:`run`): expired
    charges deleted, the default's ledgers kept at the default.

    A charge never changes once written, so each is read once: ``_known``
    maps a charge consumer to its body as read (its expiry in its user).
    """

    def __init__(self, client):
        self._client = client
        self._known = {}

    def run(self, context, now, default, renew=lambda: True):
        """One pass at ``now`` (``default``: the default budget in
        vCPU-minutes, or None); how many charges it deleted. ``renew()``
        is called before the deletions of each ledger and must return True
        for the pass to go on."""
        now = core_host.utc(now)
        every = ledgers(self._client, context)
        following = every and ledgers(self._client, context, explicit=False)
        deleted, seen = 0, set()
        for uuid_, project in sorted(every.items(), key=lambda i: i[1]):
            held = get(self._client, context,
                       '/resource_providers/%s/allocations' % uuid_)
            charges = set((held or {}).get('allocations', {}))
            seen |= charges
            bodies = {c: self._body(context, c) for c in sorted(charges)}
            due = [c for c, body in bodies.items()
                   if body is not None and self._due(c, body, now)]
            # Once per ledger, not per charge: a deletion is safe anyway
            # (at the generation read), the renewal costs two requests.
            if due and not renew():
                return deleted
            for consumer in due:
                # Refused (409): moved since read, by another holder; read
                # again if it is still there next time.
                if _send(self._client, context, 'post', '/allocations',
                         {consumer: removed(bodies[consumer])}) != 409:
                    deleted += 1
                self._known.pop(consumer, None)
            left = {c for c, body in bodies.items()
                    if body is not None and c not in due}
            if uuid_ in following:
                self._follow(context, project, default, left)
        for consumer in set(self._known) - seen:
            del self._known[consumer]
        return deleted

    def _body(self, context, consumer):
        """The charge as read once, or None if it holds nothing now."""
        if consumer not in self._known:
            body = get(self._client, context, '/allocations/%s' % consumer)
            if not (body or {}).get('allocations'):
                return None
            self._known[consumer] = body
        return self._known[consumer]

    def _put_default(self, context, base, minutes):
        """The default into a ledger that still follows it, at the
        generation its traits were read at: an operator's ``budget set``
        (traits first, then inventory) landing after the pass listed the
        ledger makes this write refused, and the next attempt sees its
        trait and leaves the ledger alone."""
        traits = get(self._client, context, base + '/traits')
        if traits is None or SET_TRAIT in traits['traits']:
            return None
        current = get(self._client, context, base + '/inventories')
        generation = traits['resource_provider_generation']
        if current is None or current['resource_provider_generation'] != (
                generation):
            return False
        if capacity(current['inventories']) == minutes:
            return None
        return _send(self._client, context, 'put', base + '/inventories', {
            'inventories': {RESOURCE_CLASS: inventory(minutes)},
            'resource_provider_generation': generation}) != 409

    @staticmethod
    def _due(consumer, body, now):
        until = expires(body.get('user_id'))
        if until is None:
            LOG.warning('OPIE: charge %s on a budget ledger says no expiry '
                        '(user %r): deleting it', consumer,
                        body.get('user_id'))
            return True
        return until <= now

    def _follow(self, context, project, default, charges):
        """A ledger of the default: brought to ``default``, or deleted
        once it holds no charge if there is none."""
        if default is not None:
            base = '/resource_providers/%s' % provider_uuid(project)
            _retry(lambda: self._put_default(context, base, default))
        elif not charges:
            # 409: charged meanwhile (by a worker with another default).
            _send(self._client, context, 'delete', '/resource_providers/%s'
                  % provider_uuid(project))
