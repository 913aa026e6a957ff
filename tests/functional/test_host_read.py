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

"""A host read for a decision: its token's generation and its usage from
one answer of Placement (``GET /resource_providers/{uuid}/allocations``;
the races around it: the functional ``tests/functional/test_race.py``)."""
import types

import pytest

from opie.core import preemptible
from opie.nova.request import cas
from opie.nova.request import claim
from opie.nova.request import host_records

NODE = 'a1b2c3d4-0000-4000-8000-000000000001'


class Placement:
    """Answers one GET with ``allocations``; records what was asked."""

    def __init__(self, allocations, status=200, body=None):
        self.body = body if body is not None else {
            'resource_provider_generation': 9, 'allocations': allocations}
        self.status = status
        self.asked = []

    def get(self, url, version=None, global_request_id=None):
        self.asked.append((url, version))
        return types.SimpleNamespace(status_code=self.status, text='no',
                                     json=lambda: self.body)


CONTEXT = types.SimpleNamespace(global_id='req-1')


def test_the_token_and_every_consumers_usage_come_from_one_answer():
    placement = Placement({
        cas.consumer(NODE): {'resources': {preemptible.HOST_TOKEN: 1},
                             'consumer_generation': 7},
        'normal': {'resources': {'VCPU': 2, 'MEMORY_MB': 4000},
                   'consumer_generation': 1},
        'other': {'resources': {'VCPU': 4, 'DISK_GB': 40},
                  'consumer_generation': 3},
        'preemptible': {'resources': {preemptible.CUSTOM[0]: 8},
                        'consumer_generation': 0}})

    generation, usages = host_records.read_host(placement, CONTEXT, NODE)

    assert generation == 7
    assert usages == {'VCPU': 6, 'MEMORY_MB': 4000, 'DISK_GB': 40,
                      preemptible.CUSTOM[0]: 8, preemptible.HOST_TOKEN: 1}
    # One request, at the microversion that gives consumer generations.
    assert placement.asked == [
        ('/resource_providers/%s/allocations' % NODE, claim.VERSION)]


@pytest.mark.parametrize('allocations', [
    {}, {'instance': {'resources': {'VCPU': 1}, 'consumer_generation': 4}}])
def test_a_host_without_its_token_is_at_no_generation(allocations):
    generation, _ = host_records.read_host(Placement(allocations), CONTEXT,
                                           NODE)

    assert generation is cas.ABSENT


def test_another_nodes_token_is_not_this_ones():
    other = 'a1b2c3d4-0000-4000-8000-000000000002'
    generation, _ = host_records.read_host(Placement({
        cas.consumer(other): {'resources': {preemptible.HOST_TOKEN: 1},
                              'consumer_generation': 5}}), CONTEXT, NODE)

    assert generation is cas.ABSENT


TOKEN = cas.consumer(NODE)


@pytest.mark.parametrize('allocations', [
    None, [], 'x', {'c': None}, {'c': {}}, {'c': {'resources': None}},
    {'c': {'resources': {'VCPU': None}}}, {'c': {'resources': {'VCPU': '2'}}},
    {'c': {'resources': {'VCPU': 1.5}}}, {'c': {'resources': {'VCPU': True}}},
    {TOKEN: {'resources': {preemptible.HOST_TOKEN: 1}}},
    {TOKEN: {'resources': {preemptible.HOST_TOKEN: 1},
             'consumer_generation': '7'}}])
def test_an_answer_not_as_placement_lists_allocations_is_an_error(
        allocations):
    # One line naming the request, not a traceback nor a usage of 0.
    with pytest.raises(claim.ClaimError,
                       match='GET /resource_providers/%s/allocations' % NODE):
        host_records.read_host(Placement(allocations), CONTEXT, NODE)


@pytest.mark.parametrize('body', [
    [], 'x', {'resource_provider_generation': 1}])
def test_an_answer_without_allocations_is_an_error(body):
    with pytest.raises(claim.ClaimError, match='GET /resource_providers/'):
        host_records.read_host(Placement(None, body=body), CONTEXT, NODE)


def test_a_token_at_no_generation_is_absent():
    # Placement refuses a write at null to an existing token: safe.
    generation, _ = host_records.read_host(Placement({TOKEN: {
        'resources': {preemptible.HOST_TOKEN: 1},
        'consumer_generation': None}}), CONTEXT, NODE)

    assert generation is cas.ABSENT


def test_a_refused_read_is_an_error_not_an_empty_host():
    with pytest.raises(claim.ClaimError, match='GET /resource_providers/'):
        host_records.read_host(Placement({}, status=503), CONTEXT, NODE)
