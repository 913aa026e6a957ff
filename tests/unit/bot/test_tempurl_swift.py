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

"""TempURLs against a real Swift proxy, names that need quoting included.

Swift's tempurl middleware (``swift/common/middleware/tempurl.py``,
``TempURL.__call__``) HMACs ``'/v1/%s/%s/%s' % (account, container, obj)``
built from the request's ``PATH_INFO``, which the WSGI server has already
percent-decoded, and ``swift.common.digest.get_hmac`` encodes that text as
UTF-8: a signature must cover the *decoded* path, while the URL carries
the percent-encoded one.

The real Swift runs in a child process (this file run as a script), so
its eventlet monkey-patching stays out of the test process: tempauth,
tempurl and the proxy from ``proxy-server.conf`` loaded the way
``swift-proxy-server`` loads it, over real account, container and object
servers with one-device rings, all on 127.0.0.1.  The same tests run on
``tests.unit.bot.fake_swift``, so the fake checks signatures as Swift
does.  Without the ``swift`` package the real-Swift cases skip, saying so.
"""
import hashlib
import hmac
import importlib.metadata
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
import yaml

from opie.bot import agent
from opie.bot.openstack import stores
from tests.unit.bot import fake_swift
from tests.unit.bot import helpers

# Object names that need quoting in a URL, and one that looks quoted.
NAMES = [
    'plain.json',
    'with space',
    'ünïcødé/ключ/名前',
    '100%',
    '%41 already quoted?',
    'what?',
    'sharp#1',
    'one+two',
    'this&that=1',
    'semi;colon',
    "checkpoints/t 1/a%2Fb?c#d+e&f;g'~.tar.gz",
]
# A job whose name needs quoting gives a container whose name does too.
JOB = 'näme with space&%-1a2b3c'
START_TIMEOUT_S = 120
# The child greens everything first, as Swift's servers do, then runs
# this file as __main__.
CHILD = ('import eventlet; eventlet.monkey_patch(); import runpy, sys; '
         'runpy.run_path(sys.argv[1], run_name="__main__")')
REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))

SWIFT_CONF = """\
[swift-hash]
swift_hash_path_suffix = opie-tempurl-test

[storage-policy:0]
name = gold
default = yes
"""

PROXY_CONF = """\
[DEFAULT]
swift_dir = %(root)s
log_udp_host = 127.0.0.1
log_udp_port = 9

[pipeline:main]
pipeline = catch_errors gatekeeper proxy-logging tempurl tempauth \
proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true

[filter:tempauth]
use = egg:swift#tempauth
user_test_tester = testing .admin

[filter:tempurl]
use = egg:swift#tempurl

[filter:catch_errors]
use = egg:swift#catch_errors

[filter:gatekeeper]
use = egg:swift#gatekeeper

[filter:proxy-logging]
use = egg:swift#proxy_logging
"""


class _DictCache:
    """What Swift's memcache middleware puts in ``env['swift.cache']``
    (tempauth keeps tokens there), held in this process: no memcached."""

    def __init__(self):
        self.data = {}

    def get(self, key, raise_on_error=False):
        return self.data.get(key)

    def set(self, key, value, serialize=True, time=0, min_compress_len=0,
            raise_on_error=False):
        self.data[key] = value

    def incr(self, key, delta=1, time=0):
        self.data[key] = int(self.data.get(key) or 0) + delta
        return self.data[key]

    def decr(self, key, delta=1, time=0):
        return self.incr(key, -delta, time)

    def delete(self, key, server_key=None):
        self.data.pop(key, None)


def _serve_swift(root):
    """Child process: a one-node Swift on 127.0.0.1; prints its port, or
    why it cannot start."""
    try:
        import eventlet
        from eventlet import wsgi
        from eventlet.green import os as green_os
        from swift.account.server import AccountController
        from swift.common import utils
        from swift.common.ring import RingBuilder
        from swift.common.wsgi import loadapp
        from swift.container.server import ContainerController
        import xattr
    except ImportError as exc:
        print(json.dumps({'skip': '%s: %s' % (type(exc).__name__, exc)}),
              flush=True)
        return

    with open(os.path.join(root, 'swift.conf'), 'w') as f:
        f.write(SWIFT_CONF)
    conf_file = os.path.join(root, 'proxy-server.conf')
    with open(conf_file, 'w') as f:
        f.write(PROXY_CONF % {'root': root})
    utils.set_swift_dir(root)
    devices = os.path.join(root, 'devices')
    os.makedirs(os.path.join(devices, 'sda'))
    probe = os.path.join(root, 'xattr-probe')
    open(probe, 'w').close()
    try:
        xattr.setxattr(probe, 'user.swift.probe', b'1')
        from swift.obj.server import ObjectController
        kind = 'on disk'
    except OSError:
        from swift.obj.mem_server import ObjectController
        kind = 'in memory (no xattr on %s)' % root
    conf = {'devices': devices, 'mount_check': 'false', 'swift_dir': root,
            'log_udp_host': '127.0.0.1', 'log_udp_port': '9'}
    for name, app in (('account', AccountController(conf)),
                      ('container', ContainerController(conf)),
                      ('object', ObjectController(conf))):
        sock = eventlet.listen(('127.0.0.1', 0))
        builder = RingBuilder(2, 1, 1)
        builder.add_dev({'id': 0, 'region': 1, 'zone': 1,
                         'ip': '127.0.0.1', 'port': sock.getsockname()[1],
                         'device': 'sda', 'weight': 1})
        builder.rebalance()
        builder.get_ring().save(os.path.join(root, '%s.ring.gz' % name))
        eventlet.spawn(wsgi.server, sock, app, log_output=False)
    pipeline = loadapp(conf_file)
    cache = _DictCache()

    def proxy(env, start_response):
        env['swift.cache'] = cache
        return pipeline(env, start_response)

    def exit_with_parent():
        # stdin is the parent's pipe: EOF when the test ends or dies.
        while green_os.read(0, 1):
            pass
        os._exit(0)

    eventlet.spawn(exit_with_parent)
    sock = eventlet.listen(('127.0.0.1', 0))
    print(json.dumps({'port': sock.getsockname()[1], 'objects': kind}),
          flush=True)
    wsgi.server(sock, proxy, log_output=False)


def _start_real_swift(tmp_path):
    """(child process, storage URL, token, description), or a skip."""
    try:
        version = importlib.metadata.version('swift')
    except importlib.metadata.PackageNotFoundError:
        pytest.skip('REAL SWIFT NOT TESTED: the swift package is not '
                    'installed in %s (pip install -e .[test] installs it)'
                    % sys.prefix)
    root = tmp_path / 'swift'
    root.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [REPO] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
    # The child's log goes to a file: a pipe nobody reads would fill up
    # and stop the whole (single-threaded, eventlet) Swift.
    log = tmp_path / 'swift.log'
    with open(log, 'w') as err:
        proc = subprocess.Popen(
            [sys.executable, '-c', CHILD, os.path.abspath(__file__),
             str(root)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
            text=True, env=env, cwd=REPO)
    watchdog = threading.Timer(START_TIMEOUT_S, proc.kill)
    watchdog.start()
    line = proc.stdout.readline()
    watchdog.cancel()
    if not line:
        proc.kill()
        proc.communicate()
        pytest.fail('the real Swift (swift %s) did not start:\n%s'
                    % (version, log.read_text()[-4000:]))
    started = json.loads(line)
    if 'skip' in started:
        proc.communicate()
        pytest.skip('REAL SWIFT NOT TESTED: swift %s is installed but does '
                    'not import here: %s' % (version, started['skip']))
    port = started['port']
    req = urllib.request.Request(
        'http://127.0.0.1:%d/auth/v1.0' % port,
        headers={'X-Storage-User': 'test:tester',
                 'X-Storage-Pass': 'testing'})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            url = resp.headers['X-Storage-Url']
            token = resp.headers['X-Auth-Token']
    except OSError as exc:
        proc.kill()
        proc.communicate()
        pytest.fail('the real Swift (swift %s) refused tempauth: %s\n%s'
                    % (version, exc, log.read_text()[-4000:]))
    return proc, url, token, 'swift %s, objects %s' % (version,
                                                       started['objects'])


@pytest.fixture(params=['real-swift', 'fake-swift'])
def swift(request, tmp_path):
    """(storage URL, token) of a real Swift proxy, or of the fake."""
    if request.param == 'fake-swift':
        server = fake_swift.FakeSwift(token='tok-9')
        yield server.url, 'tok-9'
        server.stop()
        return
    proc, url, token, what = _start_real_swift(tmp_path)
    print('real Swift proxy at %s: %s' % (url, what))
    yield url, token
    proc.kill()
    proc.communicate()


@pytest.fixture
def conn(swift, tmp_path):
    url, token = swift
    path = tmp_path / 'clouds.yaml'
    path.write_text(yaml.safe_dump({'clouds': {'s': {
        'auth_type': 'admin_token',
        'auth': {'endpoint': url, 'token': token}}}}))
    return helpers.connect({'OS_CLIENT_CONFIG_FILE': str(path)}, 's')


def _sign(key, method, path, expires):
    body = '%s\n%d\n%s' % (method, expires, path)
    return hmac.new(key.encode(), body.encode(), hashlib.sha256).hexdigest()


def test_swift_signs_the_decoded_path_not_the_quoted_one(conn):
    _, spec = stores.open_store('swift', 'j-1', conn, create=True)
    name = 'a b/ü?#%.txt'
    url = '%s/%s' % (spec['url'], urllib.parse.quote(name))
    quoted = urllib.parse.urlsplit(url).path
    expires = int(time.time() + 300)

    def put(path):
        sig = _sign(spec['temp_url_key'], 'PUT', path, expires)
        req = urllib.request.Request(
            '%s?temp_url_sig=%s&temp_url_expires=%d' % (url, sig, expires),
            data=b'x', method='PUT')
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status
        except urllib.error.HTTPError as exc:
            return exc.code

    assert put(quoted) == 401
    assert put(urllib.parse.unquote(quoted)) == 201


@pytest.mark.parametrize('job', ['j-1', JOB])
def test_agent_and_client_agree_on_names_that_need_quoting(conn, job):
    client, spec = stores.open_store('swift', job, conn, create=True)
    worker = agent.open_store(spec)

    for n, name in enumerate(NAMES):
        worker.put(name, b'v%d' % n)
    for n, name in enumerate(NAMES):
        assert worker.get(name) == b'v%d' % n, name
        assert client.get(name) == b'v%d' % n, name
        assert not worker.create(name, b'again'), name
    assert client.list() == sorted(NAMES)

    assert worker.create('results/ü t?1.json', b'one')
    assert not worker.create('results/ü t?1.json', b'two')
    assert client.get('results/ü t?1.json') == b'one'

    for name in NAMES:
        worker.delete(name)
        worker.delete(name)
        assert worker.get(name) is None, name
    assert client.list() == ['results/ü t?1.json']


def test_a_wrong_key_is_refused(conn):
    client, spec = stores.open_store('swift', JOB, conn, create=True)
    thief = agent.TempUrlStore(spec['url'], 'not-the-key')
    with pytest.raises(urllib.error.HTTPError) as exc:
        thief.put('with space', b'forged')
    assert exc.value.code == 401
    assert client.get('with space') is None


if __name__ == '__main__':
    _serve_swift(sys.argv[-1])
