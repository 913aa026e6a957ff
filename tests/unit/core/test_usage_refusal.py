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

"""A host refused from Placement's usages alone is refused, for the same
reason, by the search over its instances, whatever they are
(:func:`opie.core.scheduling.refusal_by_usage` against
:func:`~opie.core.scheduling.assess_host` as the oracle).

Instances are drawn independently of the usage: listed ones may take less
than Placement counts (ineligible or unseen ones) or more (victims claimed
by another worker), as the plugin's host records can; the host is built
from them as the plugin builds it.
"""
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from opie.core import costs
from opie.core import host as core_host
from opie.core import resources as res
from opie.core import scheduling
from tests.unit.core import helpers

PERIOD = costs.load_cost_model('period')
CAPACITY = helpers.PAPER_HOST
FLAVORS = (helpers.SMALL, helpers.MEDIUM, helpers.LARGE)
USED = st.builds(res.Resources, st.integers(0, 10),
                 st.integers(0, 20000), st.integers(0, 1200))


def _instances():
    return st.lists(st.builds(
        lambda i, size, minutes, eligible: helpers.inst(
            'p%d' % i, size, minutes=minutes, eligible=eligible),
        st.integers(0, 99), st.sampled_from(FLAVORS), st.integers(0, 300),
        st.booleans()), max_size=6, unique_by=lambda i: i.name)


def _host(normal_used, preemptible_used, listed):
    """As the plugin's ``HostRecord.core_host`` builds it: preemptible
    usage no listed instance explains counts as used."""
    unlisted = res.total(i.resources for i in listed).shortfall(
        preemptible_used)
    return core_host.Host('h', CAPACITY, normal_used + unlisted,
                          tuple(listed))


@settings(max_examples=1000, deadline=None)
@given(USED, USED, _instances(), st.sampled_from(FLAVORS), st.booleans(),
       st.sampled_from([None, 0, 1, 2]),
       st.sampled_from(scheduling.RANKINGS))
def test_a_refusal_from_usage_is_the_searchs_whatever_the_instances(
        normal_used, preemptible_used, listed, wanted, preemptible,
        max_victims, ranking):
    request = scheduling.Request(wanted, preemptible)
    why = scheduling.refusal_by_usage(request, CAPACITY, normal_used,
                                      preemptible_used)

    if why:
        option, searched = scheduling.assess_host(
            request, _host(normal_used, preemptible_used, listed), PERIOD,
            helpers.NOW, max_victims=max_victims, ranking=ranking)
        assert (option, searched) == (None, why)


def test_preemptible_usage_short_of_the_shortfall_is_h_n_short():
    """8 vCPU, 6 of them normal, 1 preemptible: a large (4 vCPU) request
    lacks 3 in h_f, which 1 preemptible vCPU cannot cover."""
    request = scheduling.Request(helpers.LARGE)

    assert scheduling.refusal_by_usage(
        request, CAPACITY, res.Resources(6, 0, 0),
        res.Resources(1, 0, 0)) == scheduling.NO_ROOM_NORMAL
    # 4 normal, 2 preemptible: the shortfall is 2, which 2 preemptible
    # vCPUs may cover; the instances decide.
    assert scheduling.refusal_by_usage(
        request, CAPACITY, res.Resources(4, 0, 0),
        res.Resources(2, 0, 0)) == ''


def test_a_preemptible_request_is_refused_short_of_h_f():
    request = scheduling.Request(helpers.MEDIUM, preemptible=True)

    assert scheduling.refusal_by_usage(
        request, CAPACITY, res.Resources(4, 0, 0),
        res.Resources(3, 0, 0)) == scheduling.NO_ROOM_FULL
    assert scheduling.refusal_by_usage(
        request, CAPACITY, res.Resources(4, 0, 0),
        res.Resources(2, 0, 0)) == ''
