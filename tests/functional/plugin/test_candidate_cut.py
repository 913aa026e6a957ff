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

"""Attacks on the candidate cut (:func:`opie.nova.request.host_records.
first_candidates`, :meth:`opie.nova.manager.ClaimingClient.
get_allocation_candidates`) by random Placement answers, checked against
a model of Placement's own cut (``RequestWideSearchContext.limit_results``):

* an answer asked with one more than the limit and cut by OPIE is the one
  Placement gives at the limit: provider forests with nested children and
  sharing providers, summaries of trees no request uses, limits of 1, the
  answer exactly at the limit and one above it;
* with Placement randomising, OPIE's cut is a cut Placement could have
  made: ``limit`` of the requests, the summaries of their trees;
* through the client, on hosts of random usage: Nova gets Placement's
  answer at its limit, or the whole answer; never a cut answer while a
  host left out has free room (h_f) and none of those kept has.

Derandomised: the same examples on every run.
"""
import random
from unittest import mock

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from opie.core import preemptible
from opie.nova import manager
from opie.nova.request import host_records

VERSION = '1.36'


# A model of Placement's answer ------------------------------------------
@st.composite
def forests(draw):
    """``(requests, summaries)``: Placement's whole answer, uncut. Each
    request uses one tree (its root, maybe children of it) and maybe a
    sharing provider; summaries hold every provider of the trees the
    requests use, and maybe trees no request uses."""
    roots = ['r%d' % i for i in range(draw(st.integers(1, 6)))]
    tree = {}
    for root in roots:
        tree[root] = root
        for c in range(draw(st.integers(0, 3))):
            tree['%s-c%d' % (root, c)] = root
    sharing = ['s%d' % i for i in range(draw(st.integers(0, 2)))]
    for s in sharing:
        tree[s] = s
    requests = []
    for _ in range(draw(st.integers(0, 12))):
        root = draw(st.sampled_from(roots))
        members = [rp for rp, r in tree.items() if r == root]
        used = draw(st.lists(st.sampled_from(members), min_size=1,
                             unique=True))
        if sharing and draw(st.booleans()):
            used.append(draw(st.sampled_from(sharing)))
        requests.append(
            {'allocations': {rp: {'resources': {'VCPU': 1}}
                             for rp in used}})
    used_roots = {tree[rp] for r in requests for rp in r['allocations']}
    extra = set(draw(st.lists(st.sampled_from(sorted(tree)), max_size=3)))
    summaries = {}
    for rp, root in tree.items():
        if root in used_roots or root in extra:
            summaries[rp] = {
                'resources': {}, 'traits': [],
                'parent_provider_uuid': None if rp == root else root,
                'root_provider_uuid': root}
    return requests, summaries


def placement_cut(requests, summaries, limit, rng=None):
    """Placement's answer at ``limit`` (``limit_results``): sampled with
    ``rng`` when Placement randomises."""
    if limit and limit < len(requests):
        if rng is not None:
            requests = rng.sample(requests, limit)
        else:
            requests = requests[:limit]
        roots = {summaries[rp]['root_provider_uuid']
                 for r in requests for rp in r['allocations']}
        summaries = {rp: s for rp, s in summaries.items()
                     if s['root_provider_uuid'] in roots}
    elif rng is not None:
        requests = list(requests)
        rng.shuffle(requests)
    return requests, summaries, VERSION


def opie_cut(answer, limit):
    """What OPIE hands Nova from an answer asked with ``limit`` + 1,
    before any probe."""
    if len(answer[0]) <= limit:
        return answer
    return host_records.first_candidates(answer, limit)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(forests(), st.integers(1, 14))
def test_the_cut_is_placements_own(forest, limit):
    requests, summaries = forest
    asked = placement_cut(requests, summaries, limit + 1)

    assert opie_cut(asked, limit) == placement_cut(requests, summaries,
                                                   limit)


@settings(max_examples=50, deadline=None, derandomize=True)
@given(forests())
def test_the_cut_at_and_just_above_the_limit(forest):
    requests, summaries = forest
    for limit in (len(requests) - 1, len(requests)):
        if limit < 1:
            continue
        asked = placement_cut(requests, summaries, limit + 1)
        assert opie_cut(asked, limit) == placement_cut(requests, summaries,
                                                       limit)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(forests(), st.integers(1, 14), st.integers(0, 2 ** 32))
def test_a_randomised_cut_is_one_placement_could_make(forest, limit, seed):
    requests, summaries = forest
    asked = placement_cut(requests, summaries, limit + 1,
                          random.Random(seed))
    kept, held, _ = opie_cut(asked, limit)

    assert len(kept) == min(limit, len(requests))
    assert all(r in requests for r in kept)
    # The summaries of their trees (all of them when nothing was cut).
    roots = {summaries[rp]['root_provider_uuid']
             for r in kept for rp in r['allocations']}
    expected = summaries if len(requests) <= limit else {
        rp: s for rp, s in summaries.items()
        if s['root_provider_uuid'] in roots}
    assert held == expected


# Through the client, on hosts of random usage ----------------------------
SIZE = 2  # the request's vCPUs (its memory and disk always fit)


@st.composite
def clouds(draw):
    """Hosts in Placement's order: (vCPU capacity, normal vCPUs used,
    preemptible vCPUs used), preemptible capacity equal to the
    standard's."""
    hosts = []
    for _ in range(draw(st.integers(0, 8))):
        capacity = draw(st.integers(0, 6))
        normal = draw(st.integers(0, capacity))
        hosts.append((capacity, normal,
                      draw(st.integers(0, capacity - normal))))
    return hosts


def _summary(capacity, normal, preempt):
    big = {'capacity': 1000, 'used': 0}
    return {'resources': {
        'VCPU': {'capacity': capacity, 'used': normal},
        'MEMORY_MB': big, 'DISK_GB': big,
        preemptible.CUSTOM[0]: {'capacity': capacity, 'used': preempt}},
        'traits': [], 'parent_provider_uuid': None}


def _placement(hosts, probe):
    """Placement's whole answer to the request (standard vCPUs), or to
    OPIE's probe (standard and preemptible vCPUs at once)."""
    requests, summaries = [], {}
    for i, (capacity, normal, preempt) in enumerate(hosts):
        rp = 'h%d' % i
        summaries[rp] = dict(_summary(capacity, normal, preempt),
                             root_provider_uuid=rp)
        fits = capacity - normal >= SIZE
        if probe:
            fits = fits and capacity - preempt >= SIZE
        if fits:
            requests.append({'allocations': {rp: {'resources': {
                'VCPU': SIZE}}}})
    used = {rp for r in requests for rp in r['allocations']}
    return requests, {rp: s for rp, s in summaries.items() if rp in used}


@settings(max_examples=400, deadline=None, derandomize=True)
@given(clouds(), st.integers(1, 9))
def test_nova_gets_placements_answer_and_no_free_host_is_hidden(hosts,
                                                                limit):
    probes = []

    def get_allocation_candidates(context, resources):
        probe = resources is probes[-1] if probes else False
        return placement_cut(*_placement(hosts, probe), resources._limit)

    def fit_probe(resources, summaries):
        probes.append(mock.Mock(_limit=resources._limit))
        return probes[-1]

    nova_client = mock.Mock()
    nova_client.get_allocation_candidates.side_effect = (
        get_allocation_candidates)
    client = manager.ClaimingClient(nova_client, tokens=None)
    resources = mock.Mock(_limit=limit)
    resources.merged_resources.return_value = {'VCPU': SIZE}

    with mock.patch.object(host_records, 'fit_probe', fit_probe):
        found = client.get_allocation_candidates('context', resources)

    assert resources._limit == limit
    whole = placement_cut(*_placement(hosts, False), None)
    assert found in (placement_cut(*whole[:2], limit), whole)
    free = {'h%d' % i for i, (c, n, p) in enumerate(hosts)
            if c - n - p >= SIZE}
    if found != whole and not free & set(found[1]):
        # A cut answer where nothing is free (h_f) stands only when no
        # host left out is free either: the request would preempt.
        assert not free
