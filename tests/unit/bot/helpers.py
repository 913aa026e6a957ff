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

"""Shared helpers for the opie-bot tests."""
import os
import pathlib
from unittest import mock

from opie import clouds
from opie.bot.job import jobfile
from opie.bot.job import model

ROOT = pathlib.Path(__file__).resolve().parents[3]
JOBS = ROOT / 'examples' / 'jobs'
PAPER_JOBS = ('j60', 'j80', 'j100', 'ed200')


def example(name):
    return jobfile.load(JOBS / ('%s.yaml' % name))


def flavor(name='f', vcpus=2, ram_gb=4.0, gflops=40.0, spot=0.03,
           normal=0.1, limit=5):
    return model.Flavor(name=name, vcpus=vcpus, ram_mb=ram_gb * 1024,
                        gflops=gflops,
                        price_h={model.PREEMPTIBLE: spot,
                                 model.NORMAL: normal},
                        limits={model.PREEMPTIBLE: limit,
                                model.NORMAL: limit})


def job(runtimes, flavors=None, deadline=2100.0, memory=5.0, **policy):
    flavors = flavors or [flavor()]
    tasks = tuple(model.Task(id='t%02d' % i, command='', memory_mb=memory,
                             runtime_s={f.name: float(r) for f in flavors})
                  for i, r in enumerate(runtimes))
    return model.Job(name='test', deadline_s=deadline,
                     policy=model.Policy(**policy),
                     flavors={f.name: f for f in flavors}, tasks=tasks)


def connect(environ, cloud=None):
    """:func:`opie.clouds.connect` with ``environ`` as the only
    variables."""
    with mock.patch.dict(os.environ, environ, clear=True):
        return clouds.connect(cloud)
