"""Shared helpers for the opie-bot tests."""
import os
import pathlib
from unittest import mock

from opie import clouds
from opie.bot import jobfile
from opie.bot import model

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
