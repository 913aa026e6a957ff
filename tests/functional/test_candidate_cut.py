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

"""OPIE's cut of the candidates (:func:`opie.nova.request.host_records.
first_candidates`) against a real in-process Placement: what Placement
answers with ``limit`` + 1, cut by OPIE to ``limit``, is what Placement
answers with ``limit`` itself, for every limit from 1 to one past the
whole answer.

The forest: compute nodes (some with two vGPU children: requests per
child, and summaries of children no request uses), some without disk of
their own sharing a disk provider through an aggregate (requests using
two trees), and one node nothing fits.
"""
import random

import fixtures
from oslo_utils.fixture import uuidsentinel
from placement.tests.functional.fixtures import placement as placement_fx
import requests as http

from opie.nova.request import host_records

VERSION = '1.36'
HEADERS = {'x-auth-token': 'admin', 'OpenStack-API-Version':
           'placement %s' % VERSION, 'accept': 'application/json'}
QUERIES = ('VCPU:1,MEMORY_MB:64',
           'VCPU:1,MEMORY_MB:64,VGPU:1',
           'VCPU:1,DISK_GB:10')


class Placement(fixtures.Fixture):
    """A Placement holding the forest of the module docstring."""

    def __init__(self, randomize=False, cap=-1):
        self.randomize = randomize
        self.cap = cap

    def _setUp(self):
        fixture = self.useFixture(placement_fx.PlacementFixture())
        fixture.conf_fixture.config(
            randomize_allocation_candidates=self.randomize,
            max_allocation_candidates=self.cap, group='placement')
        self.endpoint = fixture.endpoint
        disk = self._provider('disk')
        self._inventory(disk, DISK_GB=1000)
        self._call('put', '/resource_providers/%s/traits' % disk, {
            'resource_provider_generation': 1,
            'traits': ['MISC_SHARES_VIA_AGGREGATE']})
        self._aggregate(disk)
        for i in range(6):
            node = self._provider('node%d' % i)
            inventory = {'VCPU': 8, 'MEMORY_MB': 4096}
            if i % 3:
                inventory['DISK_GB'] = 100
            else:
                self._aggregate(node)
            if i == 5:
                inventory['VCPU'] = 0
            self._inventory(node, **inventory)
            if i % 2:
                for g in range(2):
                    gpu = self._provider('node%d-gpu%d' % (i, g), node)
                    self._inventory(gpu, VGPU=2)

    def _call(self, method, url, body=None):
        response = getattr(http, method)(self.endpoint + url, json=body,
                                         headers=HEADERS)
        assert response.status_code < 300, response.text
        return response.json() if response.text else None

    def _provider(self, name, parent=None):
        uuid = getattr(uuidsentinel, name)
        self._call('post', '/resource_providers', {
            'name': name, 'uuid': uuid, 'parent_provider_uuid': parent})
        return uuid

    def _inventory(self, uuid, **totals):
        generation = self._call(
            'get', '/resource_providers/%s' % uuid)['generation']
        self._call('put', '/resource_providers/%s/inventories' % uuid, {
            'resource_provider_generation': generation,
            'inventories': {rc: {'total': total}
                            for rc, total in totals.items() if total}})

    def _aggregate(self, uuid):
        generation = self._call(
            'get', '/resource_providers/%s' % uuid)['generation']
        self._call('put', '/resource_providers/%s/aggregates' % uuid, {
            'resource_provider_generation': generation,
            'aggregates': [uuidsentinel.shared]})

    def candidates(self, query, limit=None):
        """Nova's report client's answer: (requests, summaries, version)."""
        url = '/allocation_candidates?resources=' + query
        if limit is not None:
            url += '&limit=%d' % limit
        found = self._call('get', url)
        return (found['allocation_requests'], found['provider_summaries'],
                VERSION)


def _opie(found, limit):
    """What OPIE hands Nova from an answer asked with ``limit`` + 1,
    before any probe (:class:`opie.nova.manager.ClaimingClient`)."""
    if len(found[0]) <= limit:
        return found
    return host_records.first_candidates(found, limit)


def test_the_cut_is_placements_own():
    with Placement() as placement:
        for query in QUERIES:
            whole = placement.candidates(query)
            # The forest makes each query's answer span several trees.
            assert len(whole[0]) >= 4, query
            for limit in range(1, len(whole[0]) + 2):
                assert (_opie(placement.candidates(query, limit + 1),
                              limit)
                        == placement.candidates(query, limit)), (query,
                                                                 limit)


def test_a_randomised_cut_is_one_placement_could_make():
    random.seed(1)
    with Placement(randomize=True) as placement:
        for query in QUERIES:
            requests, summaries, _ = placement.candidates(query)
            for limit in range(1, len(requests) + 2):
                kept, held, _ = _opie(placement.candidates(query, limit + 1),
                                      limit)
                assert len(kept) == min(limit, len(requests))
                assert all(r in requests for r in kept)
                if limit >= len(requests):
                    assert held == summaries
                    continue
                roots = {summaries[rp]['root_provider_uuid']
                         for r in kept for rp in r['allocations']}
                assert held == {rp: s for rp, s in summaries.items()
                                if s['root_provider_uuid'] in roots}


def test_placements_own_cap_cuts_below_any_limit():
    # [placement] max_allocation_candidates cuts the answer before the
    # limit applies, and without a limit too: an answer within Nova's
    # limit may have been cut, and asking again without the limit finds
    # no more. opie-manage audit names it (audit_conf._candidate_cap).
    with Placement(cap=2) as placement:
        for query in QUERIES:
            found = placement.candidates(query, 1000 + 1)
            assert len(found[0]) == 2
            assert placement.candidates(query)[0] == found[0]
    with Placement() as placement:
        assert len(placement.candidates(QUERIES[0])[0]) > 2
