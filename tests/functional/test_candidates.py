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

"""OPIE does not depend on which candidates Placement returns, and offers
the conductor nothing it would claim without the host token.

With ``[scheduler] max_placement_results`` and no randomisation, Placement
returns the same first hosts every time; every host looks free in the
class a request asks for, so the free hosts may be the ones cut.
"""
import urllib.parse

from nova.scheduler.client import report
from placement.objects import research_context

from opie.testing import cloud


def record_candidate_queries(test):
    """The ``limit`` of every ``GET /allocation_candidates`` of Nova's
    report client, in order (None: unlimited), and the classes asked."""
    queries = []
    real = report.SchedulerReportClient.get

    def get(client, url, *args, **kwargs):
        path, _, query = url.partition('?')
        if path == '/allocation_candidates':
            params = urllib.parse.parse_qs(query)
            queries.append((int(params['limit'][0]) if 'limit' in params
                            else None, params['resources'][0]))
        return real(client, url, *args, **kwargs)
    test.stub_out('nova.scheduler.client.report.SchedulerReportClient.get',
                  get)
    return queries


class TruncatedCandidates(cloud.OpieCloud):
    """host-A full (two normal and two preemptible medium servers), host-B
    empty; Placement's answer is cut at one host, and host-A comes first,
    both to a normal and to a preemptible request."""

    def setUp(self):
        super().setUp()
        self.flags(max_placement_results=1, group='scheduler')
        self.full, self.free = 'host-A', 'host-B'
        for i, minutes in enumerate((70, 80)):
            self.seed('medium', 'N%d' % i, host=self.full)
            self.seed('medium', 'P%d' % i, host=self.full, preemptible=True,
                      minutes=minutes)
        self.full_host_first()

    def full_host_first(self):
        """Placement without randomisation returns its first hosts in an
        order of its own; make that order put host-A first (the free host
        is the one cut)."""
        real = report.SchedulerReportClient.get_allocation_candidates
        full = self._get_provider_uuid_by_host(self.full)

        def get_allocation_candidates(client, context, resources):
            limit, resources._limit = resources._limit, None
            try:
                found = real(client, context, resources)
            finally:
                resources._limit = limit
            if limit is None or found is None:
                return found
            requests, summaries, version = found
            kept = sorted(requests,
                          key=lambda r: full not in r['allocations'])[:limit]
            held = {rp for r in kept for rp in r['allocations']}
            return (kept, {rp: s for rp, s in summaries.items()
                           if rp in held}, version)
        self.stub_out('nova.scheduler.client.report.SchedulerReportClient.'
                      'get_allocation_candidates', get_allocation_candidates)

    def test_normal_request_goes_to_the_free_host_without_preempting(self):
        queries = record_candidate_queries(self)
        server = self.boot('medium', 'normal')

        self.assertEqual(self.free, server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual([], self.preempt_notifications())
        # The probe found room somewhere in both classes and could not
        # rule out a free host: everything was asked for.
        self.assertEqual([None, None, None], [q[0] for q in queries])

    def test_preemptible_request_goes_to_the_free_host(self):
        server = self.boot('small', 'late', preemptible=True)

        self.assertEqual(self.free, server['OS-EXT-SRV-ATTR:host'])
        self.assert_within_capacity()


class SaturatedCut(cloud.OpieCloud):
    """Both hosts full of preemptibles, Placement's answer cut at one host:
    the probe proves no host has free room (none has room left in the
    preemptible classes), so the cut answer is kept and no second full
    query is made; the request preempts on the host Placement returned."""

    def setUp(self):
        super().setUp()
        self.flags(max_placement_results=1, group='scheduler')
        for host in ('host-A', 'host-B'):
            for i, minutes in enumerate((70, 80, 90, 100)):
                self.seed('medium', '%s-P%d' % (host, i), host=host,
                          preemptible=True, minutes=minutes)

    def cut_before(self, hidden):
        """Placement's order puts ``hidden`` last (its own order may
        not), so a cut answer leaves it out; the probe and the full query
        are Placement's own."""
        real = report.SchedulerReportClient.get_allocation_candidates
        hidden = self._get_provider_uuid_by_host(hidden)

        def get_allocation_candidates(client, context, resources):
            limit = resources._limit
            if (limit is None or 'CUSTOM_PREEMPTIBLE_VCPU'
                    in resources.merged_resources()):
                return real(client, context, resources)
            resources._limit = None
            try:
                found = real(client, context, resources)
            finally:
                resources._limit = limit
            if found is None:
                return found
            requests, summaries, version = found
            kept = sorted(requests,
                          key=lambda r: hidden in r['allocations'])[:limit]
            held = {rp for r in kept for rp in r['allocations']}
            return (kept, {rp: s for rp, s in summaries.items()
                           if rp in held}, version)
        self.stub_out('nova.scheduler.client.report.SchedulerReportClient.'
                      'get_allocation_candidates', get_allocation_candidates)

    def test_the_cut_answer_is_kept_when_no_host_can_be_free(self):
        queries = record_candidate_queries(self)
        server = self.boot('medium', 'normal')

        self.assertEqual('ACTIVE', server['status'])
        self.wait_for_terminations()
        self.assertEqual(1, len(self.victim_uuids()))
        # One candidate more than the limit shows an answer was cut.
        self.assertEqual([2, 2], [q[0] for q in queries])
        # The probe asks for the request in both kinds of class.
        self.assertIn('CUSTOM_PREEMPTIBLE_VCPU:2', queries[1][1])
        self.assertIn('VCPU:2', queries[1][1].replace(
            'CUSTOM_PREEMPTIBLE_VCPU', ''))
        self.assert_within_capacity()

    def test_the_probe_asks_first_for_the_class_no_host_has(self):
        # Placement looks for providers one class at a time, in the order
        # asked, each a sum over every allocation of that class, and
        # stops at the first class no provider has room in. Asked in
        # Nova's order (by name), the probe summed the preemptible disk
        # (room on both hosts) before the memory (none).
        searched = []
        real = research_context.get_providers_with_resource

        def get_providers_with_resource(ctx, rc_id, *args, **kwargs):
            searched.append(ctx.rc_cache.string_from_id(rc_id))
            return real(ctx, rc_id, *args, **kwargs)
        self.stub_out('placement.objects.research_context.'
                      'get_providers_with_resource',
                      get_providers_with_resource)
        # Classes searched before each candidates request.
        requests = []
        get = report.SchedulerReportClient.get

        def count(client, url, *args, **kwargs):
            if url.startswith('/allocation_candidates'):
                requests.append(len(searched))
            return get(client, url, *args, **kwargs)
        self.stub_out('nova.scheduler.client.report.SchedulerReportClient.'
                      'get', count)
        server = self.boot('medium', 'normal')

        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual(2, len(requests))
        probe = searched[requests[1]:]
        self.assertEqual(1, len(probe), probe)
        self.assertIn(probe[0], ('CUSTOM_PREEMPTIBLE_VCPU',
                                 'CUSTOM_PREEMPTIBLE_MEMORY_MB'))

    def test_an_answer_within_the_limit_costs_no_probe(self):
        # Two hosts, a limit of two: Placement's answer was not cut, and
        # nothing proves that but asking for one more.
        self.flags(max_placement_results=2, group='scheduler')
        queries = record_candidate_queries(self)
        server = self.boot('medium', 'normal')

        self.assertEqual('ACTIVE', server['status'])
        self.wait_for_terminations()
        self.assertEqual(1, len(self.victim_uuids()))
        self.assertEqual([3], [q[0] for q in queries])
        self.assert_within_capacity()

    def test_a_free_host_beyond_the_cut_is_found(self):
        self._delete_server(self.server('host-B-P0'))
        self._delete_server(self.server('host-B-P1'))
        self.cut_before('host-B')
        queries = record_candidate_queries(self)
        server = self.boot('medium', 'normal')

        self.assertEqual('host-B', self.host_of(server))
        self.wait_for_terminations()
        self.assertEqual([], self.victim_uuids())
        self.assertIsNone(queries[-1][0])


class Alternates(cloud.OpieCloud):

    def test_selections_carry_alternates_as_nova_ranks_them(self):
        self.flags(max_attempts=3, group='scheduler')
        manager = self.scheduler.manager
        returned = []
        real = manager.select_destinations

        def select_destinations(*args, **kwargs):
            returned.append(real(*args, **kwargs))
            return returned[-1]
        manager.select_destinations = select_destinations

        self.boot('small', 'normal')
        self.boot('small', 'spot', preemptible=True)

        # Two hosts: the chosen one and the other.
        self.assertEqual([[2], [2]],
                         [[len(alts) for alts in r] for r in returned])
