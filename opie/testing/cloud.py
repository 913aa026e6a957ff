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

"""The cloud of the functional tests and of the in-process benchmarks:
:class:`opie.testing.harness.OpieHarness` (Nova 34 + Placement in this
process with OPIE's scheduler plugin) plus

* the paper's flavors (Table 2), each in a normal and a preemptible form;
* casts made calls, as in Nova's own functional tests;
* a check, after every test, that no normal server was ever preempted;
* servers booted through the API (:meth:`OpieCloud.boot`), or seeded
  (:meth:`OpieCloud.seed`): written as a boot leaves them into the cell
  and API databases, Placement and the compute, for a fill whose servers
  are only claimed, deleted or shelved;
* a second scheduler worker (:meth:`OpieCloud.other_worker`), with its
  own token generations, and hooks that run a competitor between a
  worker's read and its write (:meth:`OpieCloud.before_write`), inside
  Placement's handling of the write (:meth:`OpieCloud.inside_write`) or
  inside its answer to the worker's read of the host
  (:meth:`OpieCloud.inside_host_read`).
"""
import collections
import contextlib
import logging
import os
import sys
import threading
import unittest

import datetime

import fixtures
from oslo_messaging.notify import _impl_test as test_notifier
from oslo_utils import timeutils
from oslo_utils import uuidutils

from nova.compute import instance_actions
from nova.compute import power_state
from nova.compute import vm_states
import nova.conf
from nova import context as nova_context
from nova.network import model as network_model
from nova import objects
from nova.scheduler.client import report
from nova.scheduler import rpcapi
from nova.scheduler import utils as scheduler_utils
from nova import utils as nova_utils
from nova.virt import fake as fake_virt
from placement.handlers import allocation as placement_allocation

from opie.core import flavor_spec
from opie.core import preemptible
from opie.nova import manager as opie_manager
from opie.nova import notifications
from opie.nova.request import cas
from opie.nova.request import claim
from opie.nova.request import host_records
from opie.nova.request import terminate
from opie.testing import harness


def preemptible_specs(vcpus, memory_mb, disk_gb):
    """Extra specs as ``opie-manage flavor create-preemptible`` sets them."""
    return flavor_spec.preemptible_specs(
        flavor_spec.Flavor('', vcpus, memory_mb, disk_gb))


class OpieCloud(harness.OpieHarness):
    # The image of every server (Nova's GlanceFixture's first).
    IMAGE = '155d900f-4e14-4e4c-a73d-069cbf4541e6'

    def setUp(self):
        super().setUp()
        test_notifier.reset()
        self.normal = {}
        self.preemptible = {}
        for size, (vcpus, memory_mb, disk_gb) in harness.SIZES.items():
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

    # another worker and interleavings ------------------------------------
    def other_worker(self):
        """A second OpieSchedulerManager, as another scheduler worker:
        requests made inside :meth:`served_by` go to it."""
        other = opie_manager.OpieSchedulerManager()
        self.track_terminations(other)
        real = rpcapi.SchedulerAPI.select_destinations
        serving = self._serving = []

        def select_destinations(api, ctxt, spec_obj, instance_uuids,
                                return_objects=False,
                                return_alternates=False):
            if not serving:
                return real(api, ctxt, spec_obj, instance_uuids,
                            return_objects, return_alternates)
            return serving[-1].select_destinations(
                ctxt, spec_obj=spec_obj, instance_uuids=instance_uuids,
                return_objects=return_objects,
                return_alternates=return_alternates)
        self.stub_out('nova.scheduler.rpcapi.SchedulerAPI.'
                      'select_destinations', select_destinations)
        return other

    @contextlib.contextmanager
    def served_by(self, worker):
        self._serving.append(worker)
        try:
            yield worker
        finally:
            self._serving.pop()

    def before_write(self, competitor):
        """Run ``competitor()`` once, when a worker has decided and is
        about to write its first decision to Placement."""
        pending = [competitor]
        real = claim.write

        def write(*args, **kwargs):
            if pending:
                pending.pop()()
            return real(*args, **kwargs)
        self.stub_out('opie.nova.request.claim.write', write)

    def inside_write(self, competitor, names):
        """Run ``competitor()`` once inside Placement, in the first
        ``POST /allocations`` whose body names a consumer of ``names``:
        after Placement checked the consumer generations, before it reads
        the current allocations."""
        pending = [competitor]
        real = placement_allocation.create_allocation_list

        def create_allocation_list(context, data, consumers):
            if pending and set(data) & set(names):
                pending.pop()()
            return real(context, data, consumers)
        self.stub_out('placement.handlers.allocation.create_allocation_list',
                      create_allocation_list)

    def inside_host_read(self, competitor, after=False):
        """Run ``competitor()`` once inside Placement, in the first read of
        a compute node's allocations a scheduler worker makes to decide on
        it (:func:`opie.nova.request.host_records.read_host`; the computes' own
        reads are left alone): before the query runs, or once it ran and before
        the answer goes back if ``after``."""
        pending = [competitor]
        # Thread -> reads of a host for a worker under way in it (nested:
        # the competitor's own), as wsgi-intercept answers in the caller's
        # thread.
        reading = collections.Counter()
        read_host = host_records.read_host
        real = placement_allocation.alloc_obj.get_all_by_resource_provider

        def worker_read(*args, **kwargs):
            reading[threading.get_ident()] += 1
            try:
                return read_host(*args, **kwargs)
            finally:
                reading[threading.get_ident()] -= 1

        def get_all_by_resource_provider(context, rp):
            ours = reading[threading.get_ident()] > 0
            if pending and ours and not after:
                pending.pop()()
            found = real(context, rp)
            if pending and ours:
                pending.pop()()
            return found
        self.stub_out('opie.nova.request.host_records.read_host', worker_read)
        self.stub_out('placement.objects.allocation.'
                      'get_all_by_resource_provider',
                      get_all_by_resource_provider)

    def defer_terminations(self):
        """The scheduler's background terminations wait for the test: each
        call's (preemptions, request_info) is appended to the list
        returned; terminate them with ``terminator.terminate(*call)``."""
        deferred = []
        self.scheduler.manager.terminator.terminate_later.side_effect = (
            lambda *args: deferred.append(args))
        return deferred

    def before_the_act(self, competitor):
        """Run ``competitor()`` once, when a terminator has read a victim
        again and judged it, before it acts on it; the list returned is
        empty once it ran."""
        pending = [competitor]
        real = terminate.spared

        def spared(*args, **kwargs):
            why = real(*args, **kwargs)
            if pending:
                pending.pop()()
            return why
        self.stub_out('opie.nova.request.terminate.spared', spared)
        return pending

    def claim_without_terminating(self, name, host):
        """A scheduler worker takes ``name``, a preemptible on ``host``,
        and dies before terminating it; its uuid."""
        uuid = self.server(name)['id']
        rp = self._get_provider_uuid_by_host(host)
        client = self.scheduler.manager.placement_client
        context = nova_context.get_admin_context()
        self.assertIsNotNone(claim.write(
            client, context, rp,
            host_records.read_host(client, context, rp)[0],
            {uuid: claim.emptied(claim.read_victim(client, context,
                                                   uuid))}))
        return uuid

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

    def seed(self, size, name, host, preemptible=False, minutes=None,
             flavor_id=None):
        """A server of ``size`` ACTIVE on ``host`` as :meth:`boot` leaves
        it, written straight where a boot writes (the cell database, the
        API database's mapping and request spec, Placement's allocation,
        the compute's resource tracker and virt driver; Placement's
        allocation in one write with the host's token, as the scheduler
        claims) instead of through the API, conductor and scheduler: a
        tenth of a boot's time. No worker learns the token's generation
        (a worker then reads the host again, as after a restart). For a
        fill, not for what a boot itself does. ``flavor_id``: a flavor of
        the test's own instead of ``size``'s (``preemptible`` says which it
        is). Its API view.
        """
        flavors = self.preemptible if preemptible else self.normal
        project, user = self.api.project_id, self.api.auth_user
        admin = nova_context.get_admin_context()
        flavor = objects.Flavor.get_by_flavor_id(
            admin, flavor_id or flavors[size])
        image = self.glance.show(admin, self.IMAGE)
        cell = objects.HostMapping.get_by_host(admin, host).cell_mapping
        context = nova_context.RequestContext(user, project, is_admin=True)
        uuid = uuidutils.generate_uuid()
        launched = timeutils.utcnow() - datetime.timedelta(
            minutes=minutes or 0)
        objects.InstanceMapping(
            admin, instance_uuid=uuid, cell_mapping=cell,
            project_id=project, user_id=user,
            queued_for_delete=False).create()
        spec = objects.RequestSpec.from_components(
            admin, uuid, objects.ImageMeta.from_dict(image), flavor, None,
            objects.InstancePCIRequests(requests=[]), {}, None, None,
            project_id=project, user_id=user)
        spec.is_bfv = False
        spec.create()
        compute = self.computes[host]
        with nova_context.target_cell(context, cell) as cctxt:
            node = objects.ComputeNode.get_by_host_and_nodename(
                cctxt, host, host)
            instance = objects.Instance(
                cctxt, uuid=uuid, project_id=project, user_id=user,
                display_name=name, hostname=name.lower(), host=host,
                node=host, launched_on=host, compute_id=node.id,
                availability_zone=nova.conf.CONF.default_availability_zone,
                flavor=flavor, instance_type_id=flavor.id,
                vcpus=flavor.vcpus, memory_mb=flavor.memory_mb,
                root_gb=flavor.root_gb, ephemeral_gb=flavor.ephemeral_gb,
                image_ref=self.IMAGE, system_metadata=nova_utils.
                get_system_metadata_from_image(image, flavor),
                metadata={}, info_cache=objects.InstanceInfoCache(
                    network_info=network_model.NetworkInfo([])),
                pci_requests=objects.InstancePCIRequests(requests=[]),
                numa_topology=None, vm_state=vm_states.ACTIVE,
                power_state=power_state.RUNNING, task_state=None,
                launched_at=launched, created_at=launched,
                # Saved since, as a boot saves it many times: the rows read
                # as changed since a time (changes-since, the instance
                # cache's catch-up) have it.
                updated_at=timeutils.utcnow(), launch_index=0,
                reservation_id='r-' + uuid[:8], root_device_name='/dev/sda',
                kernel_id='', ramdisk_id='', config_drive='', progress=0,
                locked=False, old_flavor=None, new_flavor=None)
            instance.create()
            objects.InstanceAction.action_start(
                cctxt, uuid, instance_actions.CREATE, want_result=False)
            # The compute node record (h_f of the PreemptibleFilter in
            # safe mode) as the resource tracker saves it after a claim.
            compute.manager.rt._update_usage_from_instance(
                cctxt, instance, host)
            compute.manager.rt.compute_nodes[host].save()
        compute.driver.instances[uuid] = fake_virt.FakeInstance(
            instance.name, power_state.RUNNING, uuid)
        # One write with the host's token, as the scheduler's claim of a
        # boot makes it (no worker learns the token's generation).
        rp = self._get_provider_uuid_by_host(host)
        held = cas.parse(self.placement.get(
            '/allocations/%s' % cas.consumer(rp), version='1.28').body)
        response = self.placement.post('/allocations', {
            uuid: {'allocations': {rp: {'resources': scheduler_utils.
                                        resources_from_flavor_and_bfv(
                                            flavor, False)}},
                   'project_id': project, 'user_id': user,
                   'consumer_generation': None},
            cas.consumer(rp): cas.entry(rp, held)}, version='1.28')
        self.assertEqual(204, response.status, response.body)
        if not preemptible:
            self.normal_servers.add(uuid)
        return self.api.get_server(uuid)

    def request_spec(self, size, preemptible=False):
        """The RequestSpec the conductor sends for a ``size`` server (one
        is booted and deleted to make it)."""
        server = self.boot(size, 'template', preemptible=preemptible)
        spec = objects.RequestSpec.get_by_instance_uuid(
            nova_context.get_admin_context(), server['id'])
        # What the conductor adds to a stored spec before scheduling.
        spec.requested_resources = []
        self._delete_server(server)
        self._wait_until_deleted(server)
        return spec

    def count_placement_calls(self, calls):
        """Append each request of Nova's report client (every scheduler
        manager's) to ``calls``, as ``VERB /path``."""
        for verb in ('get', 'post', 'put', 'delete'):
            real = getattr(report.SchedulerReportClient, verb)

            def counted(client, url, *args, _real=real, _verb=verb,
                        **kwargs):
                calls.append('%s %s' % (_verb.upper(), url.split('?')[0]))
                return _real(client, url, *args, **kwargs)
            self.stub_out('nova.scheduler.client.report.'
                          'SchedulerReportClient.' + verb, counted)

    def set_launched_at(self, uuid, minutes_ago, created=True):
        """The server launched ``minutes_ago``; created then too unless
        not ``created`` (launched again since: a rescue, a rebuild)."""
        ctxt = nova_context.get_admin_context()
        mapping = objects.InstanceMapping.get_by_instance_uuid(ctxt, uuid)
        with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
            instance = objects.Instance.get_by_uuid(cctxt, uuid)
            instance.launched_at = (timeutils.utcnow()
                                    - datetime.timedelta(minutes=minutes_ago))
            if created:
                instance.created_at = instance.launched_at
            instance.save()

    def lock_as_operator(self, uuid):
        ctxt = nova_context.get_admin_context()
        mapping = objects.InstanceMapping.get_by_instance_uuid(ctxt, uuid)
        with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
            instance = objects.Instance.get_by_uuid(cctxt, uuid)
            instance.locked, instance.locked_by = True, 'admin'
            instance.save()

    def live_names(self):
        return sorted(s['name'] for s in self.api.get_servers())

    def host_of(self, server):
        return self.api.get_server(server['id'])['OS-EXT-SRV-ATTR:host']

    # checks ----------------------------------------------------------------
    def usage(self, host):
        return self._get_provider_usages(self._get_provider_uuid_by_host(host))

    def assert_within_capacity(self):
        """h_f (standard + custom usage) within capacity on every host."""
        for host in self.HOSTS:
            usage = self.usage(host)
            for rc, custom, capacity in zip(preemptible.STANDARD,
                                            preemptible.CUSTOM,
                                            harness.CAPACITY):
                used = usage.get(rc, 0) + usage.get(custom, 0)
                self.assertLessEqual(used, capacity,
                                     '%s %s over capacity: %s'
                                     % (host, rc, usage))

    def assert_normal_servers_never_preempted(self):
        self.wait_for_terminations()
        victims = {v['uuid'] for n in self.preempt_notifications()
                   for v in n['payload']['victims']}
        self.assertEqual(set(), victims & self.normal_servers)

    def server(self, name):
        return [s for s in self.api.get_servers() if s['name'] == name][0]

    def victim_uuids(self):
        """Uuids of every victim notified, in order (repeats kept)."""
        return [v['uuid'] for n in self.preempt_notifications()
                for v in n['payload']['victims']]

    @staticmethod
    def notifications(event_type):
        """The notifications of ``event_type`` sent so far, as the bus
        carries them (oslo.messaging's envelope and all)."""
        return [message for _, message, _, _ in test_notifier.NOTIFICATIONS
                if message['event_type'] == event_type]

    @classmethod
    def data(cls, primitive):
        """A versioned object's primitive as plain data, to read: every
        object is its ``nova_object.data``."""
        if isinstance(primitive, dict):
            return {key: cls.data(value) for key, value in
                    primitive.get('nova_object.data', primitive).items()}
        if isinstance(primitive, list):
            return [cls.data(item) for item in primitive]
        return primitive

    def preempt_notifications(self):
        """The ``opie.preempt.end`` notifications sent so far, each
        payload as plain data (:meth:`data`)."""
        return [dict(message, payload=self.data(message['payload']))
                for message in self.notifications(notifications.END)]


def run_quietly(tests):
    """Run ``tests`` (clouds a benchmark measures in) outside pytest, with
    Nova's logs quiet; whether all passed, failures on standard error."""
    # Nova logs services stopping after each cloud is torn down.
    logging.getLogger('nova').setLevel(logging.WARNING)
    with open(os.devnull, 'w') as devnull:
        outcome = unittest.TextTestRunner(stream=devnull).run(
            unittest.TestSuite(tests))
    for test, trace in outcome.errors + outcome.failures:
        print('%s failed:\n%s' % (test.id(), trace), file=sys.stderr)
    return outcome.wasSuccessful()
