"""An in-process Nova 34 + Placement cloud with OPIE's scheduler plugin.

Nova's own functional harness (API, conductor, scheduler, fake computes,
Placement through wsgi-intercept, casts made calls), with:

* computes of the paper's testbed (8 vCPU, 16384 MB, no reserved memory,
  allocation ratios 1.0) and a provider.yaml giving each the
  ``CUSTOM_PREEMPTIBLE_*`` inventory;
* the paper's flavors (Table 2), each in a normal and a preemptible form;
* the scheduler started with ``OpieSchedulerManager`` (or the stock
  manager, ``MANAGER = None``) and OPIE's filter and weighers next to
  Nova's defaults, at their default multipliers;
* the scheduler's background terminations tracked, so that a test waits
  for them (:meth:`OpieCloud.wait_for_terminations`) before it looks for
  victims gone.
"""
import datetime
import os
import sys
import textwrap
import warnings

import fixtures
from oslo_messaging.notify import _impl_test as test_notifier
from oslo_utils import timeutils
from sqlalchemy import exc as sqla_exc

from nova import context as nova_context
from nova import objects
from nova.tests.functional import integrated_helpers
from nova.virt import fake

from opie.cmd import flavor_spec
from opie.nova import conf as opie_conf

CAPACITY = {'VCPU': 8, 'MEMORY_MB': 16384, 'DISK_GB': 1000}
# The paper's Table 2: vCPUs, RAM (MB), disk (GB).
SIZES = {'small': (1, 2000, 20), 'medium': (2, 4000, 40),
         'large': (4, 8000, 80)}
MANAGER = 'opie.nova.manager.OpieSchedulerManager'
# Seconds a background termination may take before a test fails (a hang,
# not a timing check).
TERMINATION_TIMEOUT = 60
PROVIDER_YAML = textwrap.dedent("""\
    meta:
      schema_version: '1.0'
    providers:
      - identification:
          uuid: '$COMPUTE_NODE'
        inventories:
          additional:
            - CUSTOM_PREEMPTIBLE_VCPU:
                total: {VCPU}
            - CUSTOM_PREEMPTIBLE_MEMORY_MB:
                total: {MEMORY_MB}
            - CUSTOM_PREEMPTIBLE_DISK_GB:
                total: {DISK_GB}
    """).format(**CAPACITY)


class PaperDriver(fake.FakeDriver):
    """A compute of the paper's testbed (Table 1), with room for disk."""
    vcpus = CAPACITY['VCPU']
    memory_mb = CAPACITY['MEMORY_MB']
    local_gb = CAPACITY['DISK_GB']


def preemptible_specs(vcpus, memory_mb, disk_gb):
    """Extra specs as ``opie-manage flavor create-preemptible`` sets them."""
    return flavor_spec.preemptible_specs(
        flavor_spec.Flavor('', vcpus, memory_mb, disk_gb))


class OpieCloud(integrated_helpers._IntegratedTestBase):
    ADMIN_API = True
    microversion = 'latest'
    HOSTS = ('host-A', 'host-B')
    MANAGER = MANAGER
    # [opie] options for the test class.
    OPIE = {}

    def setUp(self):
        super().setUp()
        test_notifier.reset()
        self.normal = {}
        self.preemptible = {}
        for size, (vcpus, memory_mb, disk_gb) in SIZES.items():
            self.normal[size] = self._create_flavor(
                name=size, vcpu=vcpus, memory_mb=memory_mb, disk=disk_gb,
                ephemeral=0)
            self.preemptible[size] = self._create_flavor(
                name='preemptible.' + size, vcpu=vcpus,
                memory_mb=memory_mb, disk=disk_gb, ephemeral=0,
                extra_spec=preemptible_specs(vcpus, memory_mb, disk_gb))
        self.normal_servers = set()
        self.addCleanup(self.assert_normal_servers_never_preempted)
        manager = self.scheduler.manager
        self.select_destinations = self.useFixture(fixtures.MockPatchObject(
            manager, 'select_destinations',
            wraps=manager.select_destinations)).mock
        self.terminations = []
        if self.MANAGER is not None:
            self.useFixture(fixtures.MockPatchObject(
                manager.terminator, 'terminate_later',
                side_effect=self._track(manager.terminator.terminate_later)))

    def _track(self, terminate_later):
        def tracked(*args):
            future = terminate_later(*args)
            self.terminations.append(future)
            return future
        return tracked

    # the cloud -------------------------------------------------------------
    def _setup_services(self):
        # SQLAlchemy 2.1 deprecates orm.noload(), which Nova uses; Nova's
        # WarningsFixture turns that into an error (HTTP 500).
        warnings.filterwarnings('ignore', message=r'The noload\(\) option',
                                category=sqla_exc.SADeprecationWarning)
        # A pip-installed Nova keeps api-paste.ini under the venv, not
        # next to the package as ConfFixture assumes.
        self.flags(api_paste_config=os.path.join(
            sys.prefix, 'etc', 'nova', 'api-paste.ini'), group='wsgi')
        self.flags(instances=-1, cores=-1, ram=-1, group='quota')
        config_dir = self.useFixture(fixtures.TempDir()).path
        with open(os.path.join(config_dir, 'opie.yaml'), 'w') as f:
            f.write(PROVIDER_YAML)
        self.flags(provider_config_location=config_dir, group='compute')
        self.flags(heartbeat_path=os.path.join(config_dir, 'heartbeat'),
                   group=opie_conf.GROUP_NAME)
        for name, value in self.OPIE.items():
            self.flags(group=opie_conf.GROUP_NAME, **{name: value})
        super()._setup_services()

    def _setup_scheduler_service(self):
        self.flags(
            available_filters=['nova.scheduler.filters.all_filters',
                               'opie.nova.filters.PreemptibleFilter'],
            enabled_filters=['ComputeFilter', 'ComputeCapabilitiesFilter',
                             'ImagePropertiesFilter',
                             'ServerGroupAntiAffinityFilter',
                             'ServerGroupAffinityFilter',
                             'PreemptibleFilter'],
            weight_classes=[
                'nova.scheduler.weights.all_weighers',
                'opie.nova.weights.overcommit.OvercommitWeigher',
                'opie.nova.weights.preemption_cost.PreemptionCostWeigher'],
            group='filter_scheduler')
        if self.MANAGER is None:
            return self.start_service('scheduler')
        return self.start_service('scheduler', manager=self.MANAGER)

    def _setup_compute_service(self):
        self.stub_out('nova.virt.fake.PaperDriver', PaperDriver)
        self.flags(compute_driver='fake.PaperDriver',
                   reserved_host_memory_mb=0, cpu_allocation_ratio=1.0,
                   ram_allocation_ratio=1.0, disk_allocation_ratio=1.0)
        for host in self.HOSTS:
            compute = self._start_compute(host)
        return compute

    # servers ---------------------------------------------------------------
    def boot(self, size, name, host=None, preemptible=False,
             minutes=None, expected_state='ACTIVE', api=None):
        """Boot a server; ``minutes`` sets how long ago it launched."""
        flavors = self.preemptible if preemptible else self.normal
        server = self._create_server(
            name=name, flavor_id=flavors[size], networks='none', host=host,
            expected_state=expected_state, api=api)
        if minutes is not None:
            self.set_launched_at(server['id'], minutes)
        if not preemptible:
            self.normal_servers.add(server['id'])
        return server

    def set_launched_at(self, uuid, minutes_ago):
        ctxt = nova_context.get_admin_context()
        mapping = objects.InstanceMapping.get_by_instance_uuid(ctxt, uuid)
        with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
            instance = objects.Instance.get_by_uuid(cctxt, uuid)
            instance.launched_at = (timeutils.utcnow()
                                    - datetime.timedelta(minutes=minutes_ago))
            instance.save()

    def live_names(self):
        return sorted(s['name'] for s in self.api.get_servers())

    def host_of(self, server):
        return self.api.get_server(server['id'])['OS-EXT-SRV-ATTR:host']

    def wait_for_terminations(self):
        """Wait until the scheduler has terminated every victim it claimed
        so far (it does so in the background, after answering)."""
        for future in self.terminations:
            future.result(timeout=TERMINATION_TIMEOUT)

    # checks ----------------------------------------------------------------
    def usage(self, host):
        return self._get_provider_usages(self._get_provider_uuid_by_host(host))

    def assert_within_capacity(self):
        """h_f (standard + custom usage) within capacity on every host."""
        for host in self.HOSTS:
            usage = self.usage(host)
            for rc, capacity in CAPACITY.items():
                used = (usage.get(rc, 0)
                        + usage.get('CUSTOM_PREEMPTIBLE_' + rc, 0))
                self.assertLessEqual(used, capacity,
                                     '%s %s over capacity: %s'
                                     % (host, rc, usage))

    def assert_normal_servers_never_preempted(self):
        self.wait_for_terminations()
        victims = {v['uuid'] for n in self.preempt_notifications()
                   for v in n['payload']['victims']}
        self.assertEqual(set(), victims & self.normal_servers)

    def preempt_notifications(self):
        return [message for _, message, _, _ in test_notifier.NOTIFICATIONS
                if message['event_type'] == 'opie.preempt']
