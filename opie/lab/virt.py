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

"""The lab's virt driver: Nova's ``FakeDriver`` at a size of the lab's
choosing, whose servers run their user data as local processes
(:mod:`opie.lab.guests`), so opie-bot's agents work on the lab, read
their metadata through the lab's metadata proxy
(:mod:`opie.lab.metadata_proxy`) and get a clean shutdown, and
whose snapshots (and so shelving) upload the server's disk to the lab's
Glance through Nova's image API, with the token of the request, as a real
driver does. Like a hypervisor, it keeps its node's identity (Nova's
``compute_id`` file) and its servers (a list saved on every change)
across a restart of its ``nova-compute``, and it fails a build when a
test arms :data:`opie.lab.faults.FAIL_BUILD`.

Nova loads drivers only from ``nova.virt``: computes run through
:mod:`opie.lab.compute`, which names this module ``nova.virt.opie_lab``
(``compute_driver = opie_lab.LabDriver``).
"""
import io
import json
import os
import threading

from nova.compute import power_state
from nova.image import glance
from nova.virt import fake
from oslo_config import cfg

from opie.lab import faults
from opie.lab import guests

OPTS = [
    cfg.IntOpt('vcpus', default=4, help='vCPUs the compute reports.'),
    cfg.IntOpt('memory_mb', default=8192, help='Memory the compute '
               'reports, in MB.'),
    cfg.IntOpt('local_gb', default=40, help='Disk the compute reports, '
               'in GB.'),
    cfg.StrOpt('guests_dir', help='Where servers running user data keep '
               'their disks, one directory per server.'),
    cfg.StrOpt('metadata_url', help='The lab\'s metadata proxy '
               '(opie.lab.metadata_proxy): where servers running user data '
               'read their metadata.'),
]
cfg.CONF.register_opts(OPTS, group='lab_compute')


class LabDriver(guests.RunsUserData, fake.FakeDriverWithoutFakeNodes):
    def __init__(self, virtapi, read_only=False):
        conf = cfg.CONF.lab_compute
        self.vcpus, self.memory_mb, self.local_gb = (
            conf.vcpus, conf.memory_mb, conf.local_gb)
        self.guests = guests.Guests(conf.guests_dir, conf.metadata_url)
        super().__init__(virtapi, read_only)
        self.instances = _Kept(os.path.join(cfg.CONF.state_path,
                                            'lab-instances.json'))

    def spawn(self, context, instance, *args, **kwargs):
        if faults.take(faults.FAIL_BUILD):
            raise RuntimeError('lab fault %s: the hypervisor refused the '
                               'guest' % faults.FAIL_BUILD)
        super().spawn(context, instance, *args, **kwargs)

    def snapshot(self, context, instance, image_id, update_task_state):
        super().snapshot(context, instance, image_id, update_task_state)
        data = self.guests.disk_image(instance.uuid)
        glance.API().update(
            context, image_id,
            {'disk_format': 'raw', 'container_format': 'bare'},
            data=io.BytesIO(data), purge_props=False)


class _Kept(dict):
    """The driver's servers ({uuid: FakeInstance}), saved to ``path`` on
    every change and read back by a compute that starts again, running,
    as a hypervisor's guests outlive a restart of nova-compute.

    The compute changes it from several threads at once (a build beside a
    delete): each change and its save hold one lock, so no save reads the
    dict while another changes it, and the saves' temporary files never
    cross."""

    def __init__(self, path):
        self.path = path
        self._lock = threading.Lock()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            with open(path) as f:
                names = json.load(f)
        except FileNotFoundError:
            names = {}
        super().__init__({uuid: fake.FakeInstance(
            name, power_state.RUNNING, uuid) for uuid, name in names.items()})

    def _save(self):
        with open(self.path + '.new', 'w') as f:
            json.dump({uuid: i.name for uuid, i in self.items()}, f)
        os.replace(self.path + '.new', self.path)

    def __setitem__(self, uuid, instance):
        with self._lock:
            super().__setitem__(uuid, instance)
            self._save()

    def __delitem__(self, uuid):
        with self._lock:
            super().__delitem__(uuid)
            self._save()

    def pop(self, uuid, *default):
        with self._lock:
            found = super().pop(uuid, *default)
            self._save()
        return found
