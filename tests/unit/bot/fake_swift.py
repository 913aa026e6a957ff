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

"""A Swift endpoint on 127.0.0.1 for tests: one account, token or TempURL.

Enough of Swift's API for :mod:`opie.bot.openstack.stores` and the agent:
containers (HEAD, PUT with metadata, GET listing with prefix and marker,
DELETE), objects (GET, PUT with ``If-None-Match: *``, DELETE), and TempURL
signatures (HMAC-SHA256) checked against the container's key as Swift's
tempurl middleware checks them: over the percent-*decoded* path, UTF-8.
"""
import hashlib
import hmac
import http.server
import json
import threading
import time
import urllib.parse

ACCOUNT = '/v1/AUTH_test'
KEY_HEADER = 'X-Container-Meta-Temp-URL-Key-2'


class FakeSwift:
    def __init__(self, token):
        self.token = token
        self.containers = {}     # name -> {'meta': {}, 'objects': {}}
        self.requests = []
        handler = type('Handler', (_Handler,), {'swift': self})
        self.httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                     handler)
        self.url = 'http://127.0.0.1:%d%s' % (self.httpd.server_port,
                                              ACCOUNT)
        threading.Thread(target=self.httpd.serve_forever,
                         daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):
    swift = None

    def log_message(self, *args):
        """Quiet."""

    def _reply(self, code, body=b'', headers=None):
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)

    def _allowed(self, path, query, container):
        if self.headers.get('X-Auth-Token') == self.swift.token:
            return True
        sig = query.get('temp_url_sig', [None])[0]
        expires = int(query.get('temp_url_expires', ['0'])[0])
        key = (container or {}).get('meta', {}).get(KEY_HEADER)
        if not sig or not key or expires < time.time():
            return False
        # Swift signs the decoded path (PATH_INFO), never the quoted one.
        body = '%s\n%d\n%s' % (self.command, expires,
                               urllib.parse.unquote(path))
        good = hmac.new(key.encode(), body.encode(),
                        hashlib.sha256).hexdigest()
        return hmac.compare_digest(good, sig)

    def _handle(self):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        self.swift.requests.append((self.command, url.path))
        if not url.path.startswith(ACCOUNT + '/'):
            return self._reply(404)
        name, _, obj = url.path[len(ACCOUNT) + 1:].partition('/')
        name = urllib.parse.unquote(name)
        obj = urllib.parse.unquote(obj)
        container = self.swift.containers.get(name)
        if not self._allowed(url.path, query, container):
            return self._reply(401)
        length = int(self.headers.get('Content-Length') or 0)
        data = self.rfile.read(length) if length else b''
        if not obj:
            return self._container(name, container, query)
        if container is None:
            return self._reply(404)
        objects = container['objects']
        if self.command == 'GET':
            if obj not in objects:
                return self._reply(404)
            return self._reply(200, objects[obj])
        if self.command == 'PUT':
            if self.headers.get('If-None-Match') == '*' and obj in objects:
                return self._reply(412)
            objects[obj] = data
            return self._reply(201)
        if self.command == 'DELETE':
            return self._reply(204 if objects.pop(obj, None) is not None
                               else 404)
        return self._reply(405)

    def _container(self, name, container, query):
        if self.command == 'PUT':
            self.swift.containers.setdefault(name, {'meta': {},
                                                    'objects': {}})
            meta = {k: v for k, v in self.headers.items()
                    if k.lower().startswith('x-container-meta-')}
            self.swift.containers[name]['meta'].update(
                {KEY_HEADER if k.lower() == KEY_HEADER.lower() else k: v
                 for k, v in meta.items()})
            return self._reply(201)
        if container is None:
            return self._reply(404)
        if self.command == 'HEAD':
            return self._reply(204, headers=container['meta'])
        if self.command == 'DELETE':
            if container['objects']:
                return self._reply(409)
            del self.swift.containers[name]
            return self._reply(204)
        prefix = query.get('prefix', [''])[0]
        marker = query.get('marker', [''])[0]
        names = sorted(k for k in container['objects']
                       if k.startswith(prefix) and k > marker)[:2]
        return self._reply(200, json.dumps([{'name': n}
                                            for n in names]).encode())

    do_GET = do_PUT = do_DELETE = do_HEAD = _handle
