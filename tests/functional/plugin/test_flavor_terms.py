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

"""What the scheduler reads of a preemptible server: its project and the
terms of the flavor it was booted with (issues 26, 27)."""
import datetime
import logging

from nova import objects
import pytest

from opie.core import flavor_spec
from opie.nova import flavor_check
from opie.nova.request import host_records

LAUNCHED = datetime.datetime(2026, 1, 1, 10, 0)
OVERRIDES = flavor_spec.preemptible_specs(
    flavor_spec.Flavor('', 2, 4000, 40))


@pytest.fixture(autouse=True)
def _fresh_process(monkeypatch):
    monkeypatch.setattr(flavor_check, '_VERDICTS', {})
    monkeypatch.setattr(flavor_check, '_TERMS', {})


def _instance(**terms):
    """A Nova Instance with its copy of a preemptible flavor."""
    specs = dict(OVERRIDES, **{'opie:' + key: value
                               for key, value in terms.items()})
    flavor = objects.Flavor(name='p.medium', vcpus=2, memory_mb=4000,
                            root_gb=40, ephemeral_gb=0, swap=0,
                            extra_specs=specs)
    return objects.Instance(
        uuid='u1', flavor=flavor, project_id='alpha', launched_at=LAUNCHED,
        created_at=LAUNCHED, locked=False, locked_by=None, task_state=None,
        vm_state='active')


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == flavor_check.__name__
            and r.levelno == logging.WARNING]


def test_the_instance_carries_its_project_and_its_flavors_terms(
        opie_options):
    opie_options(minimum_uptime=300)

    found = host_records.core_instance(_instance(tier='2',
                                                 minimum_uptime='600'))

    assert (found.project_id, found.tier, found.minimum_uptime) == (
        'alpha', 2, 600)


def test_unset_terms_are_tier_0_and_opie_minimum_uptime(opie_options):
    opie_options(minimum_uptime=300)

    found = host_records.core_instance(_instance())

    assert (found.tier, found.minimum_uptime) == (0, 300)


def test_an_unset_lifetime_is_opie_maximum_lifetime(opie_options):
    opie_options(maximum_lifetime=86400, minimum_uptime=300)

    assert flavor_check.terms(_instance().flavor).lifetime() == 86400
    assert flavor_check.terms(_instance(
        maximum_lifetime='0').flavor).lifetime() is None
    assert flavor_check.terms(_instance(
        maximum_lifetime='60').flavor).lifetime() == 300


def test_a_bad_term_is_its_default_and_warned_about_once(opie_options,
                                                         caplog):
    opie_options(minimum_uptime=300)

    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            found = host_records.core_instance(_instance(
                tier='gold', minimum_uptime='-1'))

    assert (found.tier, found.minimum_uptime) == (0, 300)
    assert _warnings(caplog) == [
        "OPIE: flavor p.medium: opie:tier='gold' is not a whole number "
        "from 0 to 1000, so the scheduler reads it as tier 0; fix: "
        "opie-manage flavor set-terms p.medium --tier N",
        "OPIE: flavor p.medium: opie:minimum_uptime='-1' is not a whole "
        "number from 0 to 31536000, so the scheduler reads it as [opie] "
        "minimum_uptime; fix: opie-manage flavor set-terms p.medium "
        "--minimum-uptime N"]


def test_a_hostile_value_stays_one_log_line(caplog):
    with caplog.at_level(logging.WARNING):
        host_records.core_instance(_instance(tier='1\nOPIE: forged'))

    assert [len(m.splitlines()) for m in _warnings(caplog)] == [1]
