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

"""Where the lab keeps its files and which loopback ports it uses.

Everything the lab writes lives under one directory (``.lab`` beside the
repository, or ``$OPIE_LAB_DIR``): configuration, data, one log per
service, the PID of each process it started, and the clouds.yaml its
clients use. Only 127.0.0.1 is ever bound.
"""
import dataclasses
import json
import os
import pathlib

HOST = '127.0.0.1'
REPO = pathlib.Path(__file__).resolve().parent.parent.parent
# A lab is a throw-away test cloud on loopback: one password for all.
PASSWORD = 'opie-lab'
REGION = 'RegionOne'
PORTS = {
    'mysql': 3306, 'rabbitmq': 5672, 'epmd': 4369, 'rabbitmq-dist': 25672,
    'keystone': 5000, 'placement': 8778, 'glance': 9292, 'neutron': 9696,
    'nova-api': 8774, 'nova-metadata': 8775, 'metadata-proxy': 8776,
}
# Tenant projects, each with a user of the same name.
TENANTS = ('alpha', 'beta')
SERVICE_USERS = ('nova', 'placement', 'glance', 'neutron')
DEFAULT_COMPUTES = 4
# opie-scheduler services, as on that many controllers, each with
# [scheduler] workers = SCHEDULER_WORKERS.
SCHEDULERS = 2
SCHEDULER_WORKERS = 2
# Each compute: 4 vCPU (allocation ratio 1), 8 GB, 40 GB of disk.
COMPUTE_SIZE = (4, 8192, 40)


def root():
    return pathlib.Path(os.environ.get('OPIE_LAB_DIR', REPO / '.lab'))


@dataclasses.dataclass
class Lab:
    root: pathlib.Path
    computes: int = DEFAULT_COMPUTES

    @property
    def etc(self):
        return self.root / 'etc'

    @property
    def data(self):
        return self.root / 'data'

    @property
    def logs(self):
        return self.root / 'logs'

    @property
    def run(self):
        return self.root / 'run'

    @property
    def clouds_yaml(self):
        return self.root / 'clouds.yaml'

    @property
    def state_file(self):
        return self.root / 'state.json'

    def url(self, service, path=''):
        return 'http://%s:%d%s' % (HOST, PORTS[service], path)

    def db_url(self, database):
        return 'mysql+pymysql://opie:%s@%s:%d/%s' % (
            PASSWORD, HOST, PORTS['mysql'], database)

    @property
    def transport_url(self):
        return 'rabbit://guest:guest@%s:%d/' % (HOST, PORTS['rabbitmq'])

    def compute_host(self, index):
        return 'lab-compute-%s' % index

    @staticmethod
    def scheduler_host(index):
        return 'lab-sched-%d' % index

    def save(self):
        self.state_file.write_text(json.dumps({'computes': self.computes}))

    @classmethod
    def load(cls, path=None):
        path = pathlib.Path(path) if path else root()
        lab = cls(path)
        if lab.state_file.exists():
            lab.computes = json.loads(lab.state_file.read_text())['computes']
        return lab
