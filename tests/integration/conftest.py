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

"""The integration tests drive a running OPIE lab (``opie-lab up``)."""
import pytest

from opie.lab import configs
from opie.testing import lab

# The reconciler of the fault tests: a repair is theirs to wait for.
FAST_RECONCILER = {'reconcile_interval': 5, 'reconcile_grace_period': 20}


@pytest.fixture(autouse=True)
def empty_cloud():
    """Each test starts and leaves the lab without servers."""
    why = lab.require_up()
    if why:
        pytest.fail(why, pytrace=False)
    lab.delete_all()
    yield
    lab.delete_all()


def _schedulers_with(name, options, faults=False):
    """The schedulers restarted with ``options`` of ``[opie]`` added (in
    ``etc/nova/NAME``); as they were afterwards."""
    extra = lab.LAB.etc / 'nova' / name
    configs.write_ini(extra, {'opie': options})
    lab.restart_schedulers(extra, faults=faults)
    yield
    lab.restart_schedulers()


@pytest.fixture(scope='module')
def faulty_schedulers():
    """The module's schedulers run with the lab's fault points
    (:mod:`opie.lab.scheduler`) and a reconciler that acts within
    seconds; as they were afterwards."""
    yield from _schedulers_with('opie-faults.conf', FAST_RECONCILER,
                                faults=True)


@pytest.fixture(scope='module')
def fast_rates_schedulers():
    """The module's schedulers publish the interruption rates at every
    reconcile pass, one every few seconds; as they were afterwards."""
    yield from _schedulers_with('opie-rates.conf', dict(
        FAST_RECONCILER, interruption_rates_interval=1))
