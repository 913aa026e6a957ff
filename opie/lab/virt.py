"""The lab's virt driver: Nova's ``FakeDriver`` at a size of the lab's
choosing, whose servers run their user data as local processes
(:mod:`opie.testing.guests`), so opie-bot's agents work on the lab.

Nova loads drivers only from ``nova.virt``: computes run through
:mod:`opie.lab.compute`, which names this module ``nova.virt.opie_lab``
(``compute_driver = opie_lab.LabDriver``).
"""
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
