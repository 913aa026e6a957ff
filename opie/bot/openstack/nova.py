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

"""The Cloud port on Nova (python-novaclient).

Servers are created with the job's tag and metadata, the agent as user
data, and a normal or a preemptible flavor; preemptions, boot failures
and OPIE's notices are read by polling the servers' changes; a server is
the job's only if the journal says so.  How each is told and why:
``doc/source/design/client.rst``, *Servers on Nova*.
"""
import datetime
import secrets
import time

from keystoneauth1 import adapter
from novaclient import client as nova_client
from novaclient import exceptions as nova_exc

from opie.bot.hads import interfaces
from opie.core import contract

API_VERSION = '2.60'      # 2.52 tags at create, 2.37 nics=none
IMAGE_PROXY_VERSION = '2.35'   # the last with Nova's image API
BUILD, ACTIVE, SHELVED, GONE = 'BUILD', 'ACTIVE', 'SHELVED', 'GONE'
# Nova's statuses of a server that no longer runs.
ENDED_STATUSES = ('DELETED', 'SOFT_DELETED')
# What a delete of the job's found: the server left alone (its job tag
# was removed), deleted on the job's behalf, or ended by the cloud first.
REFUSED, DELETING, ENDED = 'refused', 'deleting', 'ended'
NONCE = 'opie-nonce'    # server metadata: which create call made it
# How long a create call may take, and how far Nova's clock may be off.
CREATE_WINDOW = datetime.timedelta(minutes=10)
# A server's updated_at may lag the clock of the poll that sees it.
SINCE_MARGIN = datetime.timedelta(minutes=2)
# How much of a notice value that is not one the journal shows.
NOTICE_VALUE_SHOWN = 80


class SetupError(Exception):
    """The cloud lacks what the job needs (flavor, image)."""


def tag_for(job_id):
    return 'opie-job-%s' % job_id


def nova_flavor_name(name, is_preemptible):
    """The Nova flavor of job flavor ``name`` in one market."""
    return name + (contract.NAME_SUFFIX if is_preemptible else '')


def client(conn):
    """A novaclient on the connection's session, at :data:`API_VERSION`."""
    compute = conn.endpoint_args('compute')
    return nova_client.Client(
        API_VERSION, session=conn.session,
        endpoint_override=compute['endpoint_override'],
        region_name=compute['region_name'],
        endpoint_type=compute['interface'])


def published_rates(nova, names):
    """{job flavor name: {window: rate or None}}: the interruption rates
    the cloud publishes on each of ``names``' preemptible flavor
    (:mod:`opie.core.interruptions`); none for a flavor it lacks."""
    by_name = {f.name: f for f in nova.flavors.list(is_public=None)}
    found = {}
    for name in names:
        flavor = by_name.get(nova_flavor_name(name, True))
        found[name] = contract.published(
            flavor.get_keys() if flavor else {})
    return found


class NovaCloud(interfaces.Cloud):
    def __init__(self, conn, job_id, image, network, journal, clock,
                 user_data, unshelve_every_s=60.0):
        self.nova = client(conn)
        self.images = adapter.Adapter(
            conn.session, default_microversion=IMAGE_PROXY_VERSION,
            **conn.endpoint_args('compute'))
        self.session = conn.session
        self.job_id = job_id
        self.tag = tag_for(job_id)
        self.image_ref = image
        self.network = network
        self.journal = journal
        self.clock = clock
        self.user_data = user_data
        self.unshelve_every_s = unshelve_every_s
        self.flavors = {}
        self.image = None
        self.servers = {}       # id -> {'name', 'state', 'tried'}
        self.deleting = set()
        self.since = None
        self._listeners = []

    # -- checks -----------------------------------------------------------

    def check(self, job):
        """Resolve the job's flavors and the image, or say what is
        missing."""
        by_name = {f.name: f for f in self.nova.flavors.list(is_public=None)}
        problems = []
        for name in sorted(job.flavors):
            for is_preemptible in (False, True):
                nova_name = nova_flavor_name(name, is_preemptible)
                flavor = by_name.get(nova_name)
                if flavor is None:
                    problems.append('no flavor %r' % nova_name)
                    continue
                marked = contract.is_preemptible(flavor.get_keys())
                if marked != is_preemptible:
                    problems.append('flavor %r %s %s=true' % (
                        nova_name, 'lacks' if is_preemptible else 'has',
                        contract.PREEMPTIBLE_SPEC))
                    continue
                self.flavors[(name, is_preemptible)] = flavor.id
        self.image = self._find_image(problems)
        if problems:
            raise SetupError('; '.join(problems))

    def _find_image(self, problems):
        by_id = self.images.get('/images/%s' % self.image_ref,
                                raise_exc=False)
        if by_id.status_code == 200:
            return by_id.json()['image']['id']
        found = [i for i in self.images.get('/images/detail', params={
            'name': self.image_ref}).json()['images']
            if i['name'] == self.image_ref]
        if len(found) != 1:
            problems.append('%s image %r' % (
                'no' if not found else 'more than one', self.image_ref))
            return None
        return found[0]['id']

    # -- the port ---------------------------------------------------------

    def create_server(self, name, flavor, preemptible):
        if self.since is None:
            self.since = _utcnow() - SINCE_MARGIN
        nonce = secrets.token_hex(8)
        self.journal.append({'t': self.clock.now(),
                             'event': 'server_creating', 'key': name,
                             'nonce': nonce,
                             'flavor': nova_flavor_name(flavor.name,
                                                        preemptible),
                             'image': self.image, 'wall': time.time()})
        server = self.nova.servers.create(
            self.display_name(name), self.image,
            self.flavors[(flavor.name, preemptible)],
            userdata=self.user_data(name), nics=self.network,
            meta={'opie-job': self.job_id, 'opie-server': name,
                  NONCE: nonce},
            tags=[self.tag])
        self.servers[server.id] = _record(name, BUILD)
        return server.id

    def delete_server(self, server_id):
        return self._delete(server_id, 'scheduler') == ENDED

    def watch(self, callback):
        self._listeners.append(callback)

    # -- resume -----------------------------------------------------------

    def adopt(self, server_id, name, state):
        self.servers[server_id] = _record(name, state)

    def orphans(self, intents, known):
        """``(id, key)`` of each server a create call made but never
        journalled: ``intents`` maps the nonce of each such call to its
        ``server_creating`` record (the design's *Servers on Nova*); ``known``
        are the ids the journal has."""
        user = self.session.get_user_id()
        matches = {}
        for server in self.nova.servers.list(search_opts={'tags': self.tag}):
            intent = intents.get((server.metadata or {}).get(NONCE))
            if intent is not None and server.id not in known and \
                    _made_by(server, intent, user):
                matches.setdefault(server.metadata[NONCE], []).append(
                    server.id)
        found = []
        for nonce, ids in sorted(matches.items()):
            if len(ids) == 1:
                found.append((ids[0], intents[nonce]['key']))
            else:
                self.journal.append({'t': self.clock.now(),
                                     'event': 'orphan_ambiguous',
                                     'key': intents[nonce]['key'],
                                     'servers': sorted(ids)})
        return found

    def display_name(self, name):
        """Unique in the project: a job file may run more than once."""
        return '%s-%s' % (self.job_id, name)

    def name_of(self, server_id):
        return self.servers[server_id]['name']

    # -- polling ----------------------------------------------------------

    def poll(self, full=False):
        """Report what changed since the last poll; ``full`` asks about
        every live server by id (after a resume)."""
        if full:
            seen = [self._get(sid) for sid, s in self.servers.items()
                    if s['state'] != GONE]
            if self.since is None:
                self.since = _utcnow() - SINCE_MARGIN
        else:
            if self.since is None:
                return
            listed = self.nova.servers.list(search_opts={
                'changes-since': self.since.isoformat()})
            newest = [_parse(s.updated) for s in listed
                      if getattr(s, 'updated', None)]
            if newest:
                self.since = max(self.since, max(newest) - SINCE_MARGIN)
            seen = [(s.id, s.status, getattr(s, 'metadata', None))
                    for s in listed]
        for sid, status, metadata in seen:
            if sid in self.servers:
                was = self.servers[sid]['state']
                self._transition(sid, status)
                self._notice(sid, (metadata or {}).get(contract.NOTICE_KEY),
                             stale=was == SHELVED)
        self._retry_unshelve()

    def _get(self, sid):
        try:
            server = self.nova.servers.get(sid)
        except nova_exc.NotFound:
            return sid, 'DELETED', None
        return sid, server.status, server.metadata

    def _transition(self, sid, status):
        entry = self.servers[sid]
        old = entry['state']
        if old == GONE:
            return
        if status == 'ACTIVE':
            entry['state'] = ACTIVE
            if old == SHELVED:
                self._emit(interfaces.RESUMED, sid)
            if not entry['booted']:
                # Also when a poll missed the first ACTIVE (shelved
                # between two polls, or while no client ran).
                entry['booted'] = True
                self._emit(interfaces.ACTIVE, sid)
        elif status in ('SHELVED', 'SHELVED_OFFLOADED') and old != SHELVED:
            entry['state'] = SHELVED
            self._emit(interfaces.HIBERNATED, sid)
        elif status in ENDED_STATUSES:
            entry['state'] = GONE
            if sid not in self.deleting:
                self._emit(interfaces.TERMINATED, sid)
        elif status == 'ERROR':
            # Journalled first: a resumed client deletes a server whose
            # error it finds in the journal, whenever this one died.
            entry['state'] = GONE
            self.journal.append({'t': self.clock.now(),
                                 'event': 'server_error', 'server': sid})
            self._delete(sid, 'boot failed')
            self._emit(interfaces.BOOT_FAILED, sid)

    def _notice(self, sid, value, stale):
        """Report a new notice ``value`` of an ACTIVE server (the design's
        *Servers on Nova*); ``stale`` if the server was shelved until
        now, so that a time past is the notice that preceded it."""
        entry = self.servers[sid]
        if entry['state'] != ACTIVE or value == entry['notice']:
            return
        withdrawn = entry['noticed'] and value is None and not stale
        entry['notice'] = value
        entry['noticed'] = False
        if withdrawn:
            self.journal.append({'t': self.clock.now(),
                                 'event': 'notice_withdrawn', 'server': sid})
        if value is None:
            return
        at = contract.notice_time(value)
        if at is not None:
            at = self.clock.job_time(at)
            if stale and at <= self.clock.now():
                return      # the notice that preceded its shelve
            entry['noticed'] = True
            self._emit(interfaces.NOTICE, sid, at)
        elif not entry['refused']:
            entry['refused'] = True
            self.journal.append({'t': self.clock.now(),
                                 'event': 'notice_unusable', 'server': sid,
                                 'value': repr(value)[:NOTICE_VALUE_SHOWN]})

    def _retry_unshelve(self):
        now = time.monotonic()
        for sid, entry in self.servers.items():
            if entry['state'] != SHELVED:
                continue
            if entry['tried'] and now - entry['tried'] < \
                    self.unshelve_every_s:
                continue
            entry['tried'] = now
            try:
                self.nova.servers.unshelve(sid)
            except nova_exc.ClientException:
                # No room yet (or already unshelving): try again later.
                continue

    # -- deleting ---------------------------------------------------------

    def _delete(self, server_id, reason):
        """Delete a server of the job: REFUSED if its job tag was removed
        (someone took it over), ENDED if the cloud had ended it before
        (no delete of this client's), else DELETING."""
        try:
            server = self.nova.servers.get(server_id)
        except nova_exc.NotFound:
            server = None
        outcome = ENDED if (
            server_id not in self.deleting
            and (server is None or server.status in ENDED_STATUSES)) \
            else DELETING
        tagged = server is not None and self.tag in (server.tags or [])
        if server is not None and not tagged and outcome != ENDED:
            self.journal.append({'t': self.clock.now(),
                                 'event': 'refused_delete',
                                 'server': server_id})
            return REFUSED
        if tagged:
            if outcome == DELETING:
                # The intent first: a resumed client then knows it was
                # this client's delete. One the cloud ended (soft deleted)
                # is only purged: a resumed client finds it gone, ended
                # by the cloud, as this one does.
                self.journal.append({'t': self.clock.now(),
                                     'event': 'server_deleting',
                                     'server': server_id, 'reason': reason})
                self.deleting.add(server_id)
            try:
                self.nova.servers.delete(server_id)
            except nova_exc.NotFound:
                pass
        if server_id in self.servers:
            # Told here: no poll reports its end.
            self.servers[server_id]['state'] = GONE
        return outcome

    def delete_all(self, reason='cancel'):
        """Delete every server the journal shows this job created
        (cancel); the ids of those left alone because their job tag was
        removed."""
        return [sid for sid in sorted(self.servers)
                if self._delete(sid, reason) == REFUSED]

    def _emit(self, kind, sid, at=None):
        event = interfaces.ServerEvent(kind, sid, at)
        for listener in self._listeners:
            listener(event)


def _made_by(server, intent, user):
    """Whether ``server`` can be the answer to the create call
    ``intent``: same user, flavor and image, created in its window."""
    wall = datetime.datetime.fromtimestamp(intent['wall'],
                                           datetime.timezone.utc)
    flavor = getattr(server, 'flavor', None) or {}
    image = getattr(server, 'image', None) or {}
    # A token-only session (admin_token) knows no user.
    return (user in (None, getattr(server, 'user_id', None))
            and flavor.get('original_name') == intent['flavor']
            and image.get('id') == intent['image']
            and wall - SINCE_MARGIN <= _parse(server.created)
            <= wall + CREATE_WINDOW)


def _record(name, state):
    """What the cloud tracks about one of the job's servers."""
    return {'name': name, 'state': state, 'tried': None,
            'booted': state == ACTIVE,
            'notice': None,      # the notice value last seen
            'noticed': False,    # and it was reported
            'refused': False}    # an unusable one was journalled


def _utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(
        microsecond=0)


def _parse(text):
    return datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
