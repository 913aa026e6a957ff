"""The lab's virt driver: Nova's ``FakeDriver`` at a size of the lab's
choosing, whose servers run their user data as local processes
(:mod:`opie.testing.guests`), so opie-bot's agents work on the lab, and
whose snapshots (and so shelving) upload the server's disk to the lab's
Glance through Nova's image API, with the token of the request, as a real
driver does.

Nova loads drivers only from ``nova.virt``: computes run through
:mod:`opie.lab.compute`, which names this module ``nova.virt.opie_lab``
(``compute_driver = opie_lab.LabDriver``).
"""
import io

from nova.image import glance
from nova.virt import fake
from oslo_config import cfg

from opie.testing import guests

OPTS = [
    cfg.IntOpt('vcpus', default=4, help='vCPUs the compute reports.'),
    cfg.IntOpt('memory_mb', default=8192, help='Memory the compute '
               'reports, in MB.'),
    cfg.IntOpt('local_gb', default=40, help='Disk the compute reports, '
               'in GB.'),
    cfg.StrOpt('guests_dir', help='Where servers running user data keep '
               'their disks, one directory per server.'),
]
cfg.CONF.register_opts(OPTS, group='lab_compute')


class LabDriver(guests.RunsUserData, fake.FakeDriver):
    def __init__(self, virtapi, read_only=False):
        conf = cfg.CONF.lab_compute
        self.vcpus, self.memory_mb, self.local_gb = (
            conf.vcpus, conf.memory_mb, conf.local_gb)
        self.guests = guests.Guests(conf.guests_dir)
        super().__init__(virtapi, read_only)

    def snapshot(self, context, instance, image_id, update_task_state):
        super().snapshot(context, instance, image_id, update_task_state)
        data = self.guests.disk_image(instance.uuid)
        glance.API().update(
            context, image_id,
            {'disk_format': 'raw', 'container_format': 'bare'},
            data=io.BytesIO(data), purge_props=False)
