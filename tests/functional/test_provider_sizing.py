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

"""``opie-manage provider-config`` sizes a compute as Nova's own libvirt
driver reports it.

Each test writes one nova.conf, runs ``opie-manage provider-config`` on it
and starts a compute of the in-process cloud with the same options and
that provider config, on Nova's own libvirt functional base (fake
libvirt, a host of 8 online CPUs). Placement then holds, on the same
provider, the VCPU and DISK_GB Nova reported and the
``CUSTOM_PREEMPTIBLE_*`` inventory the command wrote: they must agree.
Disk sizes are Nova's real ``_get_local_gb_info``: the file system of
``instances_path``, or for ``images_type = rbd`` a ``ceph`` command on
PATH that answers ``ceph df`` for both.
"""
import contextlib
import io
import json
import os
import stat

import fixtures
from nova import exception
from nova.tests.fixtures import libvirt as fakelibvirt
from nova.tests.functional.libvirt import base
from nova.virt.libvirt import driver as libvirt_driver
from nova.virt.libvirt import host as libvirt_host
from nova.virt.libvirt import utils as libvirt_utils

from opie.cmd import manage
from opie.core import preemptible
from opie.testing import harness

CPUS = 8
MEMORY_MB = 16384
# Nova's own, before its libvirt test base replaces them by stand-ins.
LOCAL_GB_INFO = libvirt_driver.LibvirtDriver.__dict__['_get_local_gb_info']
FS_INFO = libvirt_utils.get_fs_info
# What `ceph df --format=json` answers: the cluster's raw size is what
# Nova reports.
CEPH_TOTAL_BYTES = 3 * 1024 ** 4 + 5 * 1024 ** 3 + 7
CEPH_DF = {'stats': {'total_bytes': CEPH_TOTAL_BYTES},
           'pools': [{'name': 'vms', 'stats': {'max_avail': 10 ** 12,
                                               'bytes_used': 10 ** 9}}]}
FIELDS = ('total', 'reserved', 'max_unit', 'allocation_ratio')


class ProviderSizingTest(base.ServersTestBase):

    def _setup_services(self):
        harness.use_installed_nova(self)
        super()._setup_services()

    def setUp(self):
        super().setUp()
        # The base's stand-ins, made to answer as this host.
        libvirt_host.Host.get_online_cpus.return_value = set(range(CPUS))
        libvirt_driver.LibvirtDriver._get_local_gb_info.side_effect = (
            LOCAL_GB_INFO.__func__)
        libvirt_utils.get_fs_info.side_effect = FS_INFO
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.config_dir = os.path.join(self.tmp, 'provider_config')
        self._fake_ceph()

    def _fake_ceph(self):
        """A ``ceph`` on PATH answering ``ceph df``; python-rados and rbd
        stand-ins so Nova's RBDDriver gets as far as running it."""
        bin_dir = os.path.join(self.tmp, 'bin')
        os.mkdir(bin_dir)
        ceph = os.path.join(bin_dir, 'ceph')
        with open(ceph, 'w') as f:
            f.write('#!/bin/sh\necho "$@" >> %s\ncat <<EOF\n%s\nEOF\n' % (
                os.path.join(self.tmp, 'ceph-calls'), json.dumps(CEPH_DF)))
        os.chmod(ceph, stat.S_IRWXU)
        self.useFixture(fixtures.EnvironmentVariable(
            'PATH', bin_dir + os.pathsep + os.environ['PATH']))
        for module in ('rados', 'rbd'):
            self.useFixture(fixtures.MockPatch(
                'nova.storage.rbd_utils.' + module))

    def _options(self, options):
        """nova.conf with ``options`` ({group: {name: value}}), also set
        on the in-process Nova; instances are kept in the test's
        directory."""
        options.setdefault('DEFAULT', {}).setdefault('instances_path',
                                                     self.tmp)
        path = os.path.join(self.tmp, 'nova.conf')
        with open(path, 'w') as f:
            for group, values in options.items():
                f.write('[%s]\n' % group)
                for name, value in values.items():
                    f.write('%s = %s\n' % (name, value))
                    self.flags(**{name: value},
                               group=None if group == 'DEFAULT' else group)
        return path

    def _provider_config(self, conf, *args):
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), \
                contextlib.redirect_stderr(stderr):
            rc = manage.main(['provider-config', '--config-file', conf,
                              '--vcpus', str(CPUS), '--memory-mb',
                              str(MEMORY_MB), '--output',
                              os.path.join(self.config_dir, 'opie.yaml')]
                             + list(args))
        return rc, stderr.getvalue()

    def _start(self):
        self.flags(provider_config_location=self.config_dir,
                   group='compute')
        self.start_compute(host_info=fakelibvirt.HostInfo(
            cpu_nodes=1, cpu_sockets=1, cpu_cores=4, cpu_threads=2,
            # The fake reports this as the host's MB, whatever its name.
            kB_mem=MEMORY_MB))
        return self._get_provider_inventory(
            self.compute_rp_uuids['compute1'])

    def _assert_mirrored(self, options, *args):
        rc, err = self._provider_config(self._options(options), *args)
        self.assertEqual((0, ''), (rc, err))
        inventories = self._start()
        for standard, custom in zip(preemptible.STANDARD,
                                    preemptible.CUSTOM):
            self.assertEqual(
                {field: inventories[standard][field] for field in FIELDS},
                {field: inventories[custom][field] for field in FIELDS},
                custom)
        return inventories

    def test_shared_and_dedicated_sets(self):
        """The operator's case: VCPU is cpu_shared_set, PCPU is not
        mirrored."""
        inventories = self._assert_mirrored({
            'DEFAULT': {'cpu_allocation_ratio': 2.0},
            'compute': {'cpu_shared_set': '0-3,^2',
                        'cpu_dedicated_set': '4-7'}})

        self.assertEqual(3, inventories['VCPU']['total'])
        self.assertEqual(4, inventories['PCPU']['total'])
        self.assertNotIn('CUSTOM_PREEMPTIBLE_PCPU', inventories)

    def test_legacy_vcpu_pin_set_wins_over_cpu_shared_set(self):
        inventories = self._assert_mirrored({
            'DEFAULT': {'vcpu_pin_set': '1-6', 'reserved_host_cpus': 1},
            'compute': {'cpu_shared_set': '0'}})

        self.assertEqual((6, 1), (inventories['VCPU']['total'],
                                  inventories['VCPU']['reserved']))

    def test_every_online_cpu_and_the_instances_file_system(self):
        inventories = self._assert_mirrored({
            'DEFAULT': {'reserved_host_disk_mb': 1500}})

        self.assertEqual(CPUS, inventories['VCPU']['total'])
        fs = os.statvfs(self.tmp)
        self.assertEqual(fs.f_frsize * fs.f_blocks // 1024 ** 3,
                         inventories['DISK_GB']['total'])

    def test_rbd_images_are_sized_by_the_ceph_cluster(self):
        ceph_conf = os.path.join(self.tmp, 'ceph.conf')
        inventories = self._assert_mirrored({
            'DEFAULT': {'reserved_host_disk_mb': 2048},
            'libvirt': {'images_type': 'rbd', 'images_rbd_pool': 'vms',
                        'rbd_user': 'nova',
                        'images_rbd_ceph_conf': ceph_conf}})

        disk = inventories['DISK_GB']
        self.assertEqual((3 * 1024 + 5, 2), (disk['total'], disk['reserved']))
        # Both asked the same cluster as the same Ceph user.
        with open(os.path.join(self.tmp, 'ceph-calls')) as f:
            calls = set(f.read().splitlines())
        self.assertEqual({'df --format=json --id nova --conf %s' % ceph_conf},
                         calls)

    def test_dedicated_cpus_only_give_no_preemptible_vcpu(self):
        """Nova reports no VCPU, so no CUSTOM_PREEMPTIBLE_VCPU either; the
        host token and the rest are still written."""
        rc, err = self._provider_config(self._options({
            'compute': {'cpu_dedicated_set': '0-7'}}))
        self.assertEqual((0, ''), (rc, err))

        inventories = self._start()

        self.assertNotIn('VCPU', inventories)
        self.assertNotIn('CUSTOM_PREEMPTIBLE_VCPU', inventories)
        self.assertEqual(CPUS, inventories['PCPU']['total'])
        self.assertEqual(1, inventories[preemptible.HOST_TOKEN]['total'])
        self.assertEqual(inventories['MEMORY_MB']['total'],
                         inventories['CUSTOM_PREEMPTIBLE_MEMORY_MB']['total'])

    def test_overlapping_sets_neither_starts(self):
        conf = self._options({'compute': {'cpu_shared_set': '0-4',
                                          'cpu_dedicated_set': '4-7'}})

        rc, err = self._provider_config(conf)

        self.assertEqual(2, rc)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertIn('must be disjoint', err)
        self.assertRaises(exception.InvalidConfiguration, self._start)
