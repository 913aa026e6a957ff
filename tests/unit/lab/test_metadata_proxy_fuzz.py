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

"""Fuzzing the lab's metadata proxy (:mod:`opie.lab.metadata_proxy`) as a
WSGI application: whatever path a guest asks, and whatever Nova's metadata
API does, it answers with a clean status, never a traceback."""
import http.client
import http.server
import socket
import threading

import pytest

from opie.lab import metadata_proxy

# Raw paths as a WSGI server gives them (PEP 3333: each byte one
# character), and strings no WSGI server gives.
PATHS = [
    '', '/', '//', '///', '/x', '/x/', '/x//', '//x/y', '/x/y', '/x/y/',
    '/i/p/openstack/latest/meta_data.json', '/i/p/../../etc/passwd',
    '/../../x/y', '/i/p/..%2f', '/\xc3\xa9/\xe6\xbc\xa2/\xe5\xad\x97',
    '/i/p/\xc3\xa9', '/i/p/a b', '/i/p/a\x00b', '/i/p/a\x7fb',
    '/i\r\nX-Evil: 1/p/x', '/i/p\r\n/x', '/i/p/x\r\nHost: evil',
    '/i/p/x HTTP/1.1\r\nHost: evil\r\n\r\n', '/i/p/%', '/i/p/%zz',
    '/' + 'a' * 100000, '/i/p/' + 'b' * 100000, '/i/p/?q=1#f',
    '/\u6f22/\u5b57/x', '/i/p/\u00e9\u6f22', '/i\ud800/p/x',
]


class _Nova(http.server.BaseHTTPRequestHandler):
    """Nova's metadata API: answers ``server.answer`` (status, body), or
    drops the connection if it is None."""

    def do_GET(self):
        self.server.asked.append((self.path, {
            k.lower(): v for k, v in self.headers.items()}))
        if self.server.answer is None:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        status, body = self.server.answer
        self.send_response(status)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def nova(monkeypatch):
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Nova)
    server.answer, server.asked = (200, b'{}'), []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setattr(metadata_proxy, 'API',
                        'http://127.0.0.1:%d' % server.server_port)
    yield server
    server.shutdown()
    server.server_close()


def _call(path):
    """(status, body) the application answers for ``path``."""
    started = []
    body = metadata_proxy.application(
        {'PATH_INFO': path, 'REMOTE_ADDR': '10.0.0.1'},
        lambda status, headers: started.append((status, headers)))
    [(status, headers)] = started
    body = b''.join(body)
    assert dict(headers)['Content-Length'] == str(len(body))
    code, _, phrase = status.partition(' ')
    assert phrase and 100 <= int(code) < 600
    return int(code), body


@pytest.mark.parametrize('path', PATHS)
def test_any_path_gets_a_clean_answer(nova, path):
    code, _ = _call(path)
    for asked, headers in nova.asked:
        # Nothing of the path reaches a header, and only a path below the
        # instance and project reaches Nova.
        assert (headers['x-instance-id'], headers['x-tenant-id']) in (
            ('i', 'p'), ('x', 'y'))
        assert 'evil' not in str(headers).lower()
        assert headers['host'].startswith('127.0.0.1')
        assert asked.startswith('/') and ' ' not in asked


def test_a_guest_reads_its_metadata(nova):
    nova.answer = (200, b'{"meta": {}}')

    assert (200, b'{"meta": {}}') == _call(
        '/i/p/openstack/latest/meta_data.json')
    [(path, headers)] = nova.asked
    assert '/openstack/latest/meta_data.json' == path
    assert metadata_proxy.signature('i') == headers[
        'x-instance-id-signature']


@pytest.mark.parametrize('status', [
    200, 299, 404, 403, 500, 599, None], ids=str)
def test_what_nova_answers_gets_a_clean_answer(nova, status):
    nova.answer = None if status is None else (status, b'x')
    code, _ = _call('/i/p/openstack/latest/meta_data.json')
    assert code == status or (status is None and code == 502)


def test_nova_down_gets_a_clean_answer(monkeypatch):
    with socket.socket() as free:
        free.bind(('127.0.0.1', 0))
        port = free.getsockname()[1]
    monkeypatch.setattr(metadata_proxy, 'API', 'http://127.0.0.1:%d' % port)
    assert 502 == _call('/i/p/openstack/latest/meta_data.json')[0]
