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

"""Nova + Placement in this process, Nova's API on a 127.0.0.1 port.

Built on :class:`opie.testing.harness.OpieHarness` (Nova's functional
harness with OPIE's scheduler, its filter and weighers, and computes given
``CUSTOM_PREEMPTIBLE_*`` inventory), with:

* computes running :class:`virt.AgentDriver`, which starts each server's
  agent from its user data as cloud-init would;
* flavors ``small``, ``medium``, ``large`` and their preemptible twins
  ``*-preemptible`` as ``opie-manage flavor create-preemptible`` makes them;
* Nova's API served by a threaded WSGI server on 127.0.0.1.  There is no
  Keystone: a request must carry the cloud's token (``X-Auth-Token``) and
  acts as a member of the harness' project, so clients use keystoneauth1's
  ``admin_token`` plugin.

The harness is a test case: :class:`InProcessCloud` is started with
``setUp()`` and stopped with ``cleanUp()``, in tests and in the demo alike.
"""
import os
import secrets
import shutil
import socketserver
import tempfile
import threading
from wsgiref import simple_server

import yaml

from nova.tests import fixtures as nova_fixtures

from opie.testing.democloud import virt
from opie.core import contract
from opie.core import flavor_spec
from opie.lab import guests
from opie.testing import harness

IMAGE = 'cirros'


class _Tenant:
    """WSGI middleware: the token check Keystone would do, and the
    identity headers the harness' stubbed auth reads."""

    def __init__(self, app, token, project_id):
        self.app = app
        self.token = token
        self.project_id = project_id

    def __call__(self, environ, start_response):
        given = environ.get('HTTP_X_AUTH_TOKEN', '')
        if not secrets.compare_digest(given, self.token):
            start_response('401 Unauthorized',
                           [('Content-Type', 'application/json')])
            return [b'{"error": {"message": "The request you have made '
                    b'requires authentication.", "code": 401}}']
        environ['HTTP_X_AUTH_USER'] = 'tenant'
        environ['HTTP_X_AUTH_PROJECT_ID'] = self.project_id
        environ['HTTP_X_ROLES'] = 'reader,member'
        return self.app(environ, start_response)


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


class _Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        """Requests are not worth a line each."""


class InProcessCloud(harness.OpieHarness):
    DRIVER = virt.AgentDriver
    COMPUTE_FLAGS = {'shelved_offload_time': 0}

    def __init__(self, methodName='runTest', workdir=None):
        super().__init__(methodName)
        self.workdir = workdir

    def runTest(self):
        """The harness runs no test of its own when used as a cloud."""

    # -- set up ---------------------------------------------------------

    def setUp(self):
        temporary = self.workdir is None
        if temporary:
            self.workdir = tempfile.mkdtemp(prefix='opie-cloud-')
        os.makedirs(self.workdir, exist_ok=True)
        self.guests = guests.Guests(os.path.join(self.workdir, 'guests'))
        super().setUp()
        if temporary:
            # Runs last: after the guests are halted.
            self.addCleanup(shutil.rmtree, self.workdir, True)
        self.addCleanup(self.guests.halt_all)
        self.flavors = {}
        for size, (vcpus, memory_mb, disk_gb) in harness.SIZES.items():
            self.flavors[size] = self._create_flavor(
                name=size, vcpu=vcpus, memory_mb=memory_mb, disk=disk_gb,
                ephemeral=0)
            specs = flavor_spec.preemptible_specs(flavor_spec.Flavor(
                size, vcpus, memory_mb, disk_gb))
            name = size + contract.NAME_SUFFIX
            self.flavors[name] = self._create_flavor(
                name=name, vcpu=vcpus, memory_mb=memory_mb, disk=disk_gb,
                ephemeral=0, extra_spec=specs)
        self.image = nova_fixtures.GlanceFixture.image1['id']
        self.token = self.make_token()
        self._serve()

    def make_token(self):
        """The one token the cloud accepts."""
        return secrets.token_urlsafe(24)

    def _setup_compute_service(self):
        virt.AgentDriver.guests = self.guests
        return super()._setup_compute_service()

    def _serve(self):
        app = _Tenant(self.api_fixture.app(), self.token,
                      nova_fixtures.PROJECT_ID)
        httpd = simple_server.make_server('127.0.0.1', 0, app,
                                          server_class=_Server,
                                          handler_class=_Quiet)
        thread = threading.Thread(target=httpd.serve_forever,
                                  kwargs={'poll_interval': 0.1},
                                  daemon=True)
        thread.start()
        self.addCleanup(httpd.server_close)
        self.addCleanup(httpd.shutdown)
        self.endpoint = 'http://127.0.0.1:%d/v2.1' % httpd.server_port

    # -- for the client and the demo -------------------------------------

    def clouds_yaml(self, path, name='demo', token=None):
        """Write a clouds.yaml with one cloud, ``name``, for this cloud."""
        document = {'clouds': {name: {
            'auth_type': 'admin_token',
            'auth': {'endpoint': self.endpoint,
                     'token': token or self.token}}}}
        with open(path, 'w', encoding='utf-8') as f:
            yaml.safe_dump(document, f)
        return path

    def boot_normal(self, size, name):
        """Boot a normal server as another tenant's workload would."""
        return self._create_server(
            name=name, flavor_id=self.flavors[size], networks='none',
            expected_state='ACTIVE')

    def server_names(self):
        return sorted(s['name'] for s in self.api.get_servers())
