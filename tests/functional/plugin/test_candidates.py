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

"""OPIE's Placement client asks again for the candidates a limit cut off
(:class:`opie.nova.manager.ClaimingClient`), and passes on Nova's answer
when Placement failed: ``(None, None, None)``, which Nova's scheduler
turns into "No valid host"."""
import urllib.parse
from unittest import mock

from nova import objects
from nova.scheduler import utils as scheduler_utils

from opie.core import preemptible
from opie.nova import manager
from opie.nova.request import host_records


def _client(answer):
    nova_client = mock.Mock()
    nova_client.get_allocation_candidates.return_value = answer
    return nova_client, manager.ClaimingClient(nova_client, tokens=None)


def test_a_placement_failure_is_passed_on_as_nova_gives_it():
    # Nova's report client answers so when Placement is down or erred.
    nova_client, client = _client((None, None, None))
    resources = mock.Mock(_limit=1000)

    found = client.get_allocation_candidates('context', resources)

    assert found == (None, None, None)
    nova_client.get_allocation_candidates.assert_called_once_with(
        'context', resources)


def _answer(*hosts):
    """Placement's answer naming ``hosts``: each a compute node with a
    child provider in one request (a tree, as with a vGPU)."""
    requests = [{'allocations': {h: {}, h + '-child': {}}} for h in hosts]
    summaries = {}
    free = {rc: {'capacity': 8, 'used': 0}
            for rc in ('VCPU', 'MEMORY_MB', 'DISK_GB')}
    for h in hosts:
        summaries[h] = {'root_provider_uuid': h, 'resources': free}
        summaries[h + '-child'] = {'root_provider_uuid': h,
                                   'resources': {}}
    return requests, summaries, '1.39'


def test_an_answer_within_the_limit_is_not_asked_again():
    nova_client, client = _client(_answer('a', 'b'))
    resources = mock.Mock(_limit=2)
    limits = []
    nova_client.get_allocation_candidates.side_effect = (
        lambda context, r: limits.append(r._limit) or _answer('a', 'b'))

    found = client.get_allocation_candidates('context', resources)

    assert found == _answer('a', 'b')
    assert limits == [3]
    assert resources._limit == 2


def test_a_longer_answer_is_cut_as_placement_cuts():
    nova_client, client = _client(None)
    nova_client.get_allocation_candidates.return_value = _answer(
        'a', 'b', 'c')
    resources = mock.Mock(_limit=2)
    # Host a has room, so nothing more is asked.
    resources.merged_resources.return_value = {'VCPU': 1}

    found = client.get_allocation_candidates('context', resources)

    requests, summaries, _ = found
    assert requests == _answer('a', 'b')[0]
    assert summaries == _answer('a', 'b')[1]
    assert nova_client.get_allocation_candidates.call_count == 1
    assert resources._limit == 2


def _full(*hosts):
    """Placement's answer naming ``hosts``, each with no room left in h_f
    (the standard and preemptible classes together)."""
    requests, summaries, version = _answer(*hosts)
    full = {rc: {'capacity': 8, 'used': 4} for rc in (
        'VCPU', 'MEMORY_MB', 'DISK_GB', 'CUSTOM_PREEMPTIBLE_VCPU',
        'CUSTOM_PREEMPTIBLE_MEMORY_MB', 'CUSTOM_PREEMPTIBLE_DISK_GB')}
    return requests, {rp: dict(s, resources=full)
                      for rp, s in summaries.items()}, version


def test_a_probe_within_the_limit_proves_no_host_free():
    nova_client, client = _client(None)
    limits = []
    answers = {3: _full('a', 'b', 'c'), 'probe': _full('d', 'e')}

    def candidates(context, resources):
        limits.append(resources._limit)
        return answers['probe' if resources is probe else 3]
    nova_client.get_allocation_candidates.side_effect = candidates
    resources = mock.Mock(_limit=2)
    resources.merged_resources.return_value = {'VCPU': 1}
    probe = mock.Mock(_limit=2)

    with mock.patch('opie.nova.request.host_records.fit_probe',
                    return_value=probe):
        found = client.get_allocation_candidates('context', resources)

    # The probe's two hosts, as many as the limit, are all there is: none
    # is free, so the cut answer stands and nothing is asked again.
    assert limits == [3, 3]
    assert found[0] == _full('a', 'b')[0]


def _medium_request(**extra_specs):
    """Nova's ResourceRequest for a medium server of ``extra_specs``."""
    spec = objects.RequestSpec(
        flavor=objects.Flavor(vcpus=2, memory_mb=4000, root_gb=40,
                              ephemeral_gb=0, swap=0,
                              extra_specs=extra_specs),
        image=objects.ImageMeta.from_dict({}), is_bfv=False)
    return scheduler_utils.ResourceRequest.from_request_spec(spec)


def test_the_probe_asks_first_for_the_class_fewest_hosts_have_room_in():
    resources = _medium_request(**{'trait:CUSTOM_A': 'required',
                                   'trait:CUSTOM_B': 'forbidden'})
    resources._limit = 3
    # Room for the request's vCPUs on no host of the cut answer, for its
    # memory on one, for its disk and in the standard classes on all.
    summaries = {}
    for host, memory_used in (('a', 60000), ('b', 64000), ('c', 64000)):
        summaries[host] = {'resources': dict(
            {rc: {'capacity': capacity, 'used': 0}
             for rc, capacity in zip(preemptible.STANDARD,
                                     (32, 65536, 2000))},
            CUSTOM_PREEMPTIBLE_VCPU={'capacity': 32, 'used': 32},
            CUSTOM_PREEMPTIBLE_MEMORY_MB={'capacity': 65536,
                                          'used': memory_used},
            CUSTOM_PREEMPTIBLE_DISK_GB={'capacity': 2000, 'used': 640})}

    probe = host_records.fit_probe(resources, summaries)
    probe._limit = 4

    asked = urllib.parse.parse_qs(probe.to_querystring())
    assert asked.pop('resources') == [','.join((
        'CUSTOM_PREEMPTIBLE_VCPU:2', 'CUSTOM_PREEMPTIBLE_MEMORY_MB:4000',
        # Ties by name.
        'CUSTOM_PREEMPTIBLE_DISK_GB:40', 'DISK_GB:40', 'MEMORY_MB:4000',
        'VCPU:2'))]
    # The rest as Nova asks it.
    nova = urllib.parse.parse_qs(
        scheduler_utils.ResourceRequest.to_querystring(probe))
    del nova['resources']
    assert asked == nova
    assert asked['limit'] == ['4']
    assert asked['required'] == ['CUSTOM_A,!CUSTOM_B']
    # The request itself is asked as Nova asks it.
    assert resources.to_querystring() == (
        'limit=3&required=CUSTOM_A%2C%21CUSTOM_B'
        '&resources=DISK_GB%3A40%2CMEMORY_MB%3A4000%2CVCPU%3A2')


def test_a_probe_with_classes_it_did_not_rank_asks_them_in_novas_order():
    probe = _medium_request()
    probe.__class__ = host_records.Probe
    probe.order = ['VCPU']

    assert probe.to_querystring() == (
        'limit=1000&resources=VCPU%3A2%2CDISK_GB%3A40%2CMEMORY_MB%3A4000')
