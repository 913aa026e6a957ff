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

"""Where a job's objects live: a local directory or a Swift container.

``file:///PATH`` keeps them under ``PATH/<job id>/`` (the demo, or a file
system every server mounts); ``swift`` keeps them in the container
``opie-bot-<job id>`` of the cloud's object store, through the client's
keystoneauth1 session.  Agents reach that container with TempURL
signatures: the container gets a random TempURL key (container-level, so
it opens nothing else), which travels to servers in their user data and
is read back from the container on resume, never written elsewhere.
"""
import secrets
import urllib.parse

from keystoneauth1 import adapter

from opie.bot import agent

TEMP_URL_HEADER = 'X-Container-Meta-Temp-URL-Key-2'


class StoreError(Exception):
    """A store URL the client cannot use."""


class SwiftStore:
    def __init__(self, conn, container):
        self.swift = adapter.Adapter(conn.session,
                                     **conn.endpoint_args('object-store'))
        self.container = container
        self.key = None

    def _url(self, key=''):
        """The percent-encoded path of ``key`` (or of the container)."""
        return '/%s/%s' % (urllib.parse.quote(self.container, safe=''),
                           urllib.parse.quote(key))

    def open(self, create):
        """Make (or find) the container; read or set its TempURL key."""
        head = self.swift.head(self._url(), raise_exc=False)
        if head.status_code == 404 and create:
            self.key = secrets.token_hex(32)
            self.swift.put(self._url(), headers={TEMP_URL_HEADER: self.key})
            return
        if head.status_code >= 400:
            raise StoreError('swift container %s: HTTP %d' % (
                self.container, head.status_code))
        self.key = head.headers.get(TEMP_URL_HEADER)

    def agent_spec(self):
        """The agent's settings: the container's percent-encoded URL
        (:class:`agent.TempUrlStore` signs it decoded, as Swift checks)."""
        return {'kind': 'swift', 'temp_url_key': self.key,
                'url': self.swift.get_endpoint().rstrip('/') + '/'
                + urllib.parse.quote(self.container, safe='')}

    def get(self, key, limit=None):
        """The object ``key``, or None; ValueError if it holds more than
        ``limit`` bytes (streamed: no more than that is read)."""
        resp = self.swift.get(self._url(key), raise_exc=False, stream=True)
        with resp:
            if resp.status_code == 404:
                return None
            resp.raise_for_status()
            return agent.capped(resp.raw, key, limit)

    def put(self, key, data):
        self.swift.put(self._url(key), data=data)

    def create(self, key, data):
        resp = self.swift.put(self._url(key), data=data, raise_exc=False,
                              headers={'If-None-Match': '*'})
        if resp.status_code == 412:
            return False
        resp.raise_for_status()
        return True

    def delete(self, key):
        self.swift.delete(self._url(key), raise_exc=False)

    def list(self, prefix=''):
        keys, marker = [], ''
        while True:
            page = self.swift.get(self._url(), params={
                'prefix': prefix, 'marker': marker, 'format': 'json'}).json()
            if not page:
                return keys
            keys.extend(o['name'] for o in page)
            marker = page[-1]['name']

    def destroy(self):
        for key in self.list():
            self.delete(key)
        self.swift.delete(self._url(), raise_exc=False)


def file_root(url):
    """The directory of a ``file:///ABSOLUTE/PATH`` store, None for
    ``swift``, else :class:`StoreError`.  ``file://relative/x`` would
    parse as host ``relative`` and path ``/x``: refused, not guessed."""
    parsed = urllib.parse.urlsplit(url)
    if url == 'swift':
        return None
    if parsed.scheme == 'file' and parsed.netloc in ('', 'localhost') \
            and parsed.path.startswith('/') and parsed.path.strip('/') \
            and not (parsed.query or parsed.fragment):
        return parsed.path.rstrip('/')
    raise StoreError('store %r: give file:///ABSOLUTE/PATH or swift' % url)


def open_store(url, job_id, conn, create):
    """(client store, agent settings) for a store URL."""
    root = file_root(url)
    if root is not None:
        root = '%s/%s' % (root, job_id)
        return agent.DirStore(root), {'kind': 'dir', 'path': root}
    store = SwiftStore(conn, 'opie-bot-%s' % job_id)
    store.open(create)
    return store, store.agent_spec()
