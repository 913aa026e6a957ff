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

"""The scheduler's flavor check: a flavor marked preemptible that breaks
the contract is a normal flavor, and named once (issue 23)."""
import logging
import types

import pytest

from opie.core import contract
from opie.core import flavor_spec
from opie.nova import flavor_check
from opie.nova.request import host_records

SIZE = dict(vcpus=2, memory_mb=4000, root_gb=40, ephemeral_gb=0, swap=0)
OVERRIDES = flavor_spec.preemptible_specs(
    flavor_spec.Flavor('', 2, 4000, 40))


def _flavor(name, extra_specs):
    """What the scheduler reads of a Nova Flavor."""
    return types.SimpleNamespace(name=name, extra_specs=extra_specs, **SIZE)


@pytest.fixture(autouse=True)
def _fresh_process(monkeypatch):
    monkeypatch.setattr(flavor_check, '_VERDICTS', {})


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == flavor_check.__name__
            and r.levelno == logging.WARNING]


def test_a_flavor_keeping_the_contract_is_preemptible(caplog):
    assert host_records.is_preemptible(_flavor('p.medium', OVERRIDES))
    assert not host_records.is_preemptible(_flavor('medium', {}))
    assert _warnings(caplog) == []


@pytest.mark.parametrize('specs', [
    {contract.PREEMPTIBLE_SPEC: 'true'},
    dict(OVERRIDES, **{'resources:PCPU': '2'}),
    dict(OVERRIDES, **{'resources:VGPU': '1'}),
    dict(OVERRIDES, **{'resources:CUSTOM_PREEMPTIBLE_VCPU': '0'}),
])
def test_a_marked_flavor_breaking_the_contract_is_normal(specs):
    assert not host_records.is_preemptible(_flavor('p.broken', specs))


def test_the_warning_is_logged_once_per_flavor(caplog):
    broken = _flavor('p.broken', {contract.PREEMPTIBLE_SPEC: 'true'})
    other = _flavor('p.other', {contract.PREEMPTIBLE_SPEC: 'yes'})

    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            # A request's flavor, then the instances' copies.
            for flavor in (broken, _flavor('p.broken', dict(
                    broken.extra_specs)), other):
                host_records.is_preemptible(flavor)

    found = _warnings(caplog)
    assert len(found) == 2
    assert found[0] == (
        'OPIE: flavor p.broken is marked opie:preemptible=true but does not '
        'set resources:VCPU=0, resources:CUSTOM_PREEMPTIBLE_VCPU=2, '
        'resources:MEMORY_MB=0, resources:CUSTOM_PREEMPTIBLE_MEMORY_MB=4000, '
        'resources:DISK_GB=0, resources:CUSTOM_PREEMPTIBLE_DISK_GB=40 for its '
        'size (2 vCPU, 4000 MB RAM, 40 GB disk), so OPIE treats it as a '
        'normal flavor (its servers are never victims); fix: opie-manage '
        'flavor set-preemptible p.broken')
    assert found[1].startswith('OPIE: flavor p.other is marked ')


def test_a_flavor_changed_since_is_checked_again(caplog):
    with caplog.at_level(logging.WARNING):
        assert not host_records.is_preemptible(
            _flavor('p.medium', {contract.PREEMPTIBLE_SPEC: 'true'}))
        assert host_records.is_preemptible(_flavor('p.medium', OVERRIDES))

    assert len(_warnings(caplog)) == 1
