"""OPIE does not depend on which candidates Placement returns, and offers
the conductor nothing it would claim without the host token.

With ``[scheduler] max_placement_results`` and no randomisation, Placement
returns the same first hosts every time; every host looks free in the
class a request asks for, so the free hosts may be the ones cut.
"""
from tests.functional import base


class TruncatedCandidates(base.OpieCloud):
    """One host full (two normal and two preemptible medium servers), the
    other empty; Placement returns one candidate, the full one, both to a
    normal and to a preemptible request."""

    def setUp(self):
        super().setUp()
        self.flags(max_placement_results=1, group='scheduler')
        self.full = self.first_candidate()
        self.free = ({'host-A', 'host-B'} - {self.full}).pop()
        for i, minutes in enumerate((70, 80)):
            self.boot('medium', 'N%d' % i, host=self.full)
            self.boot('medium', 'P%d' % i, host=self.full, preemptible=True,
                      minutes=minutes)
        # The premise holds once the host is full: it is still the one.
        self.assertEqual(self.full, self.first_candidate())
        self.assertEqual(self.full, self.first_candidate(
            'CUSTOM_PREEMPTIBLE_'))

    def first_candidate(self, prefix=''):
        found = self.placement.get(
            '/allocation_candidates?resources={0}VCPU:1,{0}MEMORY_MB:2000,'
            '{0}DISK_GB:20&limit=1'.format(prefix), version='1.36').body
        [rp] = found['provider_summaries']
        return next(host for host in self.HOSTS
                    if self._get_provider_uuid_by_host(host) == rp)

    def test_normal_request_goes_to_the_free_host_without_preempting(self):
        server = self.boot('medium', 'normal')

        self.assertEqual(self.free, server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual([], self.preempt_notifications())

    def test_preemptible_request_goes_to_the_free_host(self):
        server = self.boot('small', 'late', preemptible=True)

        self.assertEqual(self.free, server['OS-EXT-SRV-ATTR:host'])
        self.assert_within_capacity()


class NoAlternates(base.OpieCloud):

    def test_selections_carry_no_alternates(self):
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

        self.assertEqual(2, len(returned))
        self.assertEqual([[1], [1]],
                         [[len(alts) for alts in r] for r in returned])
