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

"""What a tenant cannot do, and what the operator can cap (issue point 3).

Only an operator makes a server preemptible, through a flavor: a tenant
can neither create one nor give one the marking extra spec, and no
request field (metadata, scheduler hints) turns a normal flavor's server
into a preemptible one. Preemptible usage counts against unified limits
on ``class:CUSTOM_PREEMPTIBLE_*``.
"""
from novaclient import exceptions as nova_exc
import pytest

from opie.core import contract
from opie.testing import lab

MARK = {contract.PREEMPTIBLE_SPEC: 'true'}
SMALL_PER_HOST = 4


def test_tenant_cannot_create_a_preemptible_flavor():
    beta = lab.nova('lab-beta')
    with pytest.raises(nova_exc.Forbidden):
        beta.flavors.create('mine-preemptible', 1, 512, 1)
    with pytest.raises(nova_exc.Forbidden):
        beta.flavors.find(name='small').set_keys(MARK)


def test_request_fields_do_not_make_a_server_preemptible():
    beta = lab.nova('lab-beta')
    sneaky, = lab.boot(beta, 'sneaky', 'small', meta=MARK,
                       scheduler_hints=dict(MARK, preemptible='true'))
    assert lab.settled({sneaky})[sneaky].status == 'ACTIVE'
    allocations = lab.placement().get(
        '/allocations/%s' % sneaky).json()['allocations']
    classes = {rc for a in allocations.values() for rc in a['resources']}
    assert classes == {'VCPU', 'MEMORY_MB', 'DISK_GB'}

    # A full cloud of normal servers: a normal boot finds no victim, the
    # tenant's server is not one.
    alpha = lab.nova('lab-alpha')
    fillers = set(lab.boot(alpha, 'normal', 'small',
                           count=SMALL_PER_HOST * lab.LAB.computes - 1))
    assert {s.status for s in lab.settled(fillers).values()} == {'ACTIVE'}
    extra, = lab.boot(alpha, 'one-too-many', 'small')
    assert lab.settled({extra})[extra].status == 'ERROR'
    assert lab.settled({sneaky})[sneaky].status == 'ACTIVE'


@pytest.fixture
def preemptible_vcpu_limit():
    """alpha may run 2 preemptible vCPUs (a registered default of 100)."""
    conn = lab.connect()
    compute = conn.identity.find_service('nova')
    alpha = conn.identity.find_project('alpha')
    resource = 'class:CUSTOM_PREEMPTIBLE_VCPU'
    registered = conn.identity.create_registered_limit(
        service_id=compute.id, resource_name=resource, default_limit=100,
        region_id=lab.settings.REGION)
    limit = conn.identity.create_limit(
        service_id=compute.id, project_id=alpha.id, resource_name=resource,
        resource_limit=2, region_id=lab.settings.REGION)
    yield
    conn.identity.delete_limit(limit)
    conn.identity.delete_registered_limit(registered)


def test_preemptible_servers_count_against_unified_limits(
        preemptible_vcpu_limit):
    alpha = lab.nova('lab-alpha')
    allowed = lab.boot(alpha, 'within', 'small-preemptible', count=2)
    # Nova counts usage from Placement: only once the scheduler has
    # placed them do they count (state, not a race with the scheduler).
    assert {s.status for s in lab.settled(set(allowed)).values()} == {
        'ACTIVE'}
    with pytest.raises(nova_exc.Forbidden) as refused:
        lab.boot(alpha, 'beyond', 'small-preemptible')
    assert 'CUSTOM_PREEMPTIBLE_VCPU' in str(refused.value)
    # Normal vCPUs have no limit: the cap is on preemptible usage only.
    normal = lab.boot(alpha, 'normal', 'small')
    servers = lab.settled(set(allowed + normal))
    assert {s.status for s in servers.values()} == {'ACTIVE'}
