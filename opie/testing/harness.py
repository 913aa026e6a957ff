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

"""Nova + Placement in this process, set up as OPIE needs them.

:class:`OpieHarness` is Nova's own functional harness
(``_IntegratedTestBase``: API, conductor, scheduler, fake computes,
Placement), exactly as Nova tests itself, with:

* computes of the OPIE paper's testbed (8 vCPU, 16384 MB, 1000 GB; no
  reserved memory, allocation ratios 1.0) and the provider.yaml that
  ``opie-manage provider-config`` writes for them, giving each the
  ``CUSTOM_PREEMPTIBLE_*`` inventory;
* the scheduler started with ``OpieSchedulerManager`` (the stock manager
  when ``MANAGER`` is None) and OPIE's filter and weighers next to Nova's
  defaults, at their default multipliers;
* the ``[opie]`` options of the class attribute ``OPIE``; in shelve mode
  the scheduler's service user is :class:`ServiceUser` (no Keystone
  here), whose token :attr:`ServiceUser.TOKEN` reaches the computes;
* in-memory databases that live as long as the cloud (see
  :class:`DatabasesKept`);
* the scheduler's background terminations tracked, so that a test waits
  for them (:meth:`OpieHarness.wait_for_terminations`) before it looks
  for victims gone;
* Nova's waits for a server's state, its deletion and a migration polling
  every :data:`POLL` seconds instead of every half second, over
  :data:`LOAD_MARGIN` times the span, Nova's own wait then giving the
  verdict (and a failure's message): a server here changes state within
  hundredths of a second, so the half-second sleeps were most of a
  functional test's time. A server's state and host are looked for in
  its cell database (:meth:`OpieHarness._server_fields`), a few
  milliseconds, not through the API (tens of milliseconds of the same
  process's CPU, which the boot waited for); Nova's wait then reads the
  API once;
* each test's wall time split into its phases (:class:`PhaseClock`): the
  harness, the test's own set-up after it (the fill), the test method
  and the clean-up, which ``tests/functional/conftest.py`` prints.

Import ``nova.tests.functional`` before this module: Nova decides there how
to monkey patch, before anything else of Nova is loaded.
"""
import os
import sys
import time
import warnings

import fixtures
from keystoneauth1 import access
from keystoneauth1 import fixture as ks_fixture
from keystoneauth1 import plugin
from oslo_db.sqlalchemy import engines
from sqlalchemy import exc as sqla_exc
from sqlalchemy import pool as sqla_pool
from sqlalchemy.engine import url as sqla_url
import yaml

from nova.api.openstack import common as api_common
from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from nova.tests.functional.api import client as api_client
from nova.tests.functional import integrated_helpers
from nova.virt import fake

from opie.core import provider_config
from opie.core import resources as res
from opie.nova import conf as opie_conf

CAPACITY = res.Resources(8, 16384, 1000)
# The paper's Table 2: vCPUs, RAM (MB), disk (GB).
SIZES = {'small': (1, 2000, 20), 'medium': (2, 4000, 40),
         'large': (4, 8000, 80)}
MANAGER = 'opie.nova.manager.OpieSchedulerManager'
# Seconds between two looks of a wait, and between two of Nova's.
POLL = 0.05
NOVA_POLL = 0.5
# How many times longer than Nova's own wait ours waits before giving up:
# a boot takes seconds on a busy 2-core machine running the suite in three
# processes. A wait ends as soon as the state is reached; this only bounds
# a wait for a state that never comes.
LOAD_MARGIN = 6
# Seconds a background termination may take before a test fails (a hang,
# not a timing check).
TERMINATION_TIMEOUT = 60
# The server fields of the API that its cell database row tells.
DB_FIELDS = {
    'status': lambda i: api_common.status_from_state(i.vm_state,
                                                     i.task_state),
    'OS-EXT-STS:vm_state': lambda i: i.vm_state,
    'OS-EXT-STS:task_state': lambda i: i.task_state,
    'OS-EXT-SRV-ATTR:host': lambda i: i.host,
}
NOVA_FILTERS = ['ComputeFilter', 'ComputeCapabilitiesFilter',
                'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
                'ServerGroupAffinityFilter']


class PaperDriver(fake.FakeDriver):
    """A compute of the paper's testbed (Table 1), with room for disk."""
    vcpus, memory_mb, local_gb = CAPACITY

    @classmethod
    def capacity(cls):
        return res.Resources(cls.vcpus, cls.memory_mb, cls.local_gb)


class ServiceUser(plugin.BaseAuthPlugin):
    """The ``[service_user]`` of a cloud without Keystone: an admin of the
    service project with a fixed token."""
    TOKEN = 'opie-service-user-token'

    def get_access(self, session):
        body = ks_fixture.V3Token(user_id='opie-service',
                                  project_id='service')
        body.add_role(name='admin')
        body.add_service('image').add_standard_endpoints(
            public='http://glance.test/')
        return access.create(body=body, auth_token=self.TOKEN)


def use_installed_nova(test):
    """What any in-process cloud of Nova's functional test bases needs with
    the pip-installed Nova: call it in ``_setup_services``."""
    # SQLAlchemy 2.1 deprecates orm.noload(), which Nova uses; Nova's
    # WarningsFixture turns that into an error (HTTP 500).
    warnings.filterwarnings('ignore', message=r'The noload\(\) option',
                            category=sqla_exc.SADeprecationWarning)
    # A pip-installed Nova keeps api-paste.ini under the venv, not next to
    # the package as ConfFixture assumes.
    test.flags(api_paste_config=os.path.join(
        sys.prefix, 'etc', 'nova', 'api-paste.ini'), group='wsgi')


class DatabasesKept(fixtures.Fixture):
    """Engines of in-memory SQLite that never replace their connection.

    oslo.db has a pool replace a connection older than
    ``connection_recycle_time`` (an hour by default). An in-memory SQLite
    database lives and dies with its one connection: the replacement opens
    an empty database, and a cloud that lives over an hour (the
    5000-node benchmark's) loses its tables. While this fixture is up,
    oslo.db creates such engines without a recycle time; file databases
    are left as configured. An in-memory database is told as oslo.db
    tells it, by the pool SQLAlchemy picks for the URL.
    """

    def _setUp(self):
        create_engine = engines.create_engine

        def kept(sql_connection, **kwargs):
            url = sqla_url.make_url(sql_connection)
            if url.get_backend_name() == 'sqlite' and issubclass(
                    url.get_dialect().get_pool_class(url),
                    sqla_pool.SingletonThreadPool):
                kwargs['connection_recycle_time'] = -1
            return create_engine(sql_connection, **kwargs)
        self.useFixture(fixtures.MonkeyPatch(
            'oslo_db.sqlalchemy.engines.create_engine', kept))


class PhaseClock:
    """Marks of one test's phases: ``start`` (its set-up begins),
    ``harness`` (this harness is up), ``body`` (the test method begins),
    ``end`` (it returned); the servers booted before the body."""
    PHASES = ('harness', 'fill', 'body', 'cleanup')

    def __init__(self):
        self.marks = {'start': time.perf_counter()}
        self.boots = 0

    def mark(self, name):
        self.marks.setdefault(name, time.perf_counter())

    def split(self, finished):
        """Seconds of each of :data:`PHASES`, the clean-up ending at
        ``finished`` (a ``perf_counter`` value); a phase never reached
        (its set-up failed) takes none."""
        points = [self.marks.get(name) for name in (
            'start', 'harness', 'body', 'end')] + [finished]
        reached = [p for p in points if p is not None]
        points = [p if p is not None else reached[-1] for p in points]
        return dict(zip(self.PHASES, (
            max(0.0, later - earlier)
            for earlier, later in zip(points, points[1:]))))


class OpieHarness(integrated_helpers._IntegratedTestBase):
    ADMIN_API = True
    microversion = 'latest'
    HOSTS = ('host-A', 'host-B')
    MANAGER = MANAGER
    # [opie] options.
    OPIE = {}
    # The virt driver of every compute (found by Nova under nova.virt.fake)
    # and further compute options.
    DRIVER = PaperDriver
    COMPUTE_FLAGS = {}

    def setUp(self):
        # Underscored: Nova's TestCase clears every other attribute in its
        # clean-up, before the split is read.
        self._phase_clock = PhaseClock()
        # Before Nova's TestCase and Placement's fixture create the engines.
        self.useFixture(DatabasesKept())
        super().setUp()
        self.terminations = []
        self.track_terminations(self.scheduler.manager)
        self._phase_clock.mark('harness')

    def _run_test_method(self, result):
        self._phase_clock.mark('body')
        try:
            return super()._run_test_method(result)
        finally:
            self._phase_clock.mark('end')

    def _create_server(self, *args, **kwargs):
        if 'body' not in self._phase_clock.marks:
            self._phase_clock.boots += 1
        return super()._create_server(*args, **kwargs)

    def track_terminations(self, manager):
        """Keep the futures of ``manager``'s background terminations in
        :attr:`terminations`."""
        terminator = getattr(manager, 'terminator', None)
        if terminator is None:
            return  # stock and safe-mode managers terminate nothing
        terminate_later = terminator.terminate_later

        def tracked(*args):
            future = terminate_later(*args)
            self.terminations.append(future)
            return future
        self.useFixture(fixtures.MockPatchObject(
            terminator, 'terminate_later', side_effect=tracked))

    def wait_for_terminations(self):
        """Wait until the scheduler has terminated every victim it claimed
        so far (it does so in the background, after answering)."""
        for future in self.terminations:
            future.result(timeout=TERMINATION_TIMEOUT)

    def preempt_actions(self, uuid):
        """How many ``opie-preempt`` actions the server has."""
        actions = self.api.get_instance_actions(uuid)
        return sum(1 for a in actions if a['action'] == 'opie-preempt')

    def _setup_services(self):
        use_installed_nova(self)
        self.flags(instances=-1, cores=-1, ram=-1, group='quota')
        config_dir = self.useFixture(fixtures.TempDir()).path
        document = provider_config.build(self.DRIVER.capacity(),
                                         (1.0, 1.0, 1.0), (0, 0, 0))
        with open(os.path.join(config_dir, 'opie.yaml'), 'w') as f:
            yaml.safe_dump(document, f)
        self.flags(provider_config_location=config_dir, group='compute')
        self.flags(heartbeat_path=os.path.join(config_dir, 'heartbeat'),
                   group=opie_conf.GROUP_NAME)
        for name, value in self.OPIE.items():
            self.flags(group=opie_conf.GROUP_NAME, **{name: value})
        if self.OPIE.get('termination_mode') == opie_conf.SHELVE:
            self.useFixture(fixtures.MockPatch(
                'opie.nova.conf.load_service_auth',
                return_value=(opie_conf.SERVICE_USER, ServiceUser())))
        super()._setup_services()

    def _setup_scheduler_service(self):
        self.flags(
            available_filters=['nova.scheduler.filters.all_filters',
                               'opie.nova.filters.PreemptibleFilter'],
            enabled_filters=NOVA_FILTERS + ['PreemptibleFilter'],
            weight_classes=[
                'nova.scheduler.weights.all_weighers',
                'opie.nova.weights.overcommit.OvercommitWeigher',
                'opie.nova.weights.preemption_cost.PreemptionCostWeigher'],
            group='filter_scheduler')
        if self.MANAGER is None:
            return self.start_service('scheduler')
        return self.start_service('scheduler', manager=self.MANAGER)

    def _setup_compute_service(self):
        name = self.DRIVER.__name__
        # Nova loads compute drivers from nova.virt only.
        self.stub_out('nova.virt.fake.' + name, self.DRIVER)
        self.flags(compute_driver='fake.' + name,
                   reserved_host_memory_mb=0, cpu_allocation_ratio=1.0,
                   ram_allocation_ratio=1.0, disk_allocation_ratio=1.0,
                   **self.COMPUTE_FLAGS)
        for host in self.HOSTS:
            compute = self._start_compute(host)
        return compute

    def _poll(self, done, attempts):
        """Until ``done()``, or for LOAD_MARGIN times the span of Nova's
        wait of ``attempts`` looks."""
        deadline = time.monotonic() + attempts * NOVA_POLL * LOAD_MARGIN
        while not done() and time.monotonic() < deadline:
            time.sleep(POLL)

    def _server_fields(self, uuid):
        """The :data:`DB_FIELDS` of a server as its cell database has them
        ({} while it is only a build request, None once it is gone)."""
        context = nova_context.get_admin_context()
        try:
            mapping = objects.InstanceMapping.get_by_instance_uuid(
                context, uuid)
        except nova_exception.InstanceMappingNotFound:
            return None
        if mapping.cell_mapping is None:
            return {}
        with nova_context.target_cell(context, mapping.cell_mapping) as cell:
            try:
                instance = objects.Instance.get_by_uuid(cell, uuid,
                                                        expected_attrs=[])
            except nova_exception.InstanceNotFound:
                return None
        return {name: field(instance) for name, field in DB_FIELDS.items()}

    def _wait_for_server_parameter(self, server, expected_params,
                                   max_retries=10, api=None,
                                   wait_for_fault_key=True):
        wait = super()._wait_for_server_parameter

        def reached():
            try:
                wait(server, expected_params, 1, api, wait_for_fault_key)
            except self.failureException:
                return False
            return True

        def reached_in_cell():
            fields = self._server_fields(server['id'])
            return fields is not None and all(
                fields.get(name) == value
                for name, value in expected_params.items())
        # A fault is recorded after the ERROR state: the API tells it.
        in_cell = set(expected_params) <= set(DB_FIELDS) and not (
            wait_for_fault_key and expected_params.get('status') == 'ERROR')
        self._poll(reached_in_cell if in_cell else reached, max_retries)
        return wait(server, expected_params, max_retries, api,
                    wait_for_fault_key)

    def _wait_until_deleted(self, server):
        def gone_from_the_api():
            try:
                self.api.get_server(server['id'])
            except api_client.OpenStackApiNotFoundException:
                return True
            return False

        def gone():
            fields = self._server_fields(server['id'])
            # A build request, deleted or not, is the API's to tell.
            return fields is None or fields == {} and gone_from_the_api()
        self._poll(gone, 40)
        return super()._wait_until_deleted(server)

    def _wait_for_migration_status(self, server, expected_statuses):
        statuses = {status.lower() for status in expected_statuses}
        api = getattr(self, 'admin_api', self.api)

        def reached():
            return any(m['instance_uuid'] == server['id']
                       and m['status'].lower() in statuses
                       for m in api.api_get('/os-migrations').body[
                           'migrations'])
        self._poll(reached, 10)
        return super()._wait_for_migration_status(server, expected_statuses)
