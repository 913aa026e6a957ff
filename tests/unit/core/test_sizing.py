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

"""Nova's sizing rules for a compute's VCPU and DISK_GB, without Nova
(tests/functional/test_provider_sizing.py checks them against Nova's
libvirt driver, tests/functional/plugin/test_nova_agrees.py the CPU set
parser against Nova's)."""
import re

import pytest

from opie.core import sizing

ONLINE = set(range(8))
OPTION = '[compute] cpu_shared_set'


@pytest.mark.parametrize('spec, cpus', [
    ('0-3,^2', {0, 1, 3}),
    ('0-7,^2-5', {0, 1, 6, 7}),
    (' 1 , 3 ,,', {1, 3}),
    ('^1,0-2', {0, 2}),
    ('4', {4}),
    ('0-3,^0-3', set()),
    # Nova accepts excluding a CPU no host has; so does OPIE, listing
    # only those a host may have.
    ('0-15,^9000', set(range(16))),
    ('0-3,^2-99999999999', {0, 1}),
])
def test_cpu_specs_read_as_nova_reads_them(spec, cpus):
    assert sizing.parse_cpu_spec(OPTION, spec) == cpus


@pytest.mark.parametrize('spec, message', [
    ('3-1', "invalid range expression '3-1'"),
    ('-1', "invalid range expression '-1'"),
    ('2-', "invalid range expression '2-'"),
    ('^', "invalid exclusion expression '^'"),
    ('one', "invalid inclusion expression 'one'"),
    # Refused before a set of a hundred billion CPUs fills memory.
    ('0-99999999999', "CPU 99999999999 in '0-99999999999' is not one of "
     "the 8192 CPUs Linux supports"),
])
def test_malformed_cpu_specs_are_named(spec, message):
    with pytest.raises(ValueError,
                       match='^%s$' % re.escape('%s: %s' % (OPTION, message))):
        sizing.parse_cpu_spec(OPTION, spec)


@pytest.mark.parametrize('options, vcpus', [
    ({}, 8),
    # An empty value is an unset option, as in Nova.
    ({'cpu_shared_set': '', 'cpu_dedicated_set': ''}, 8),
    ({'cpu_shared_set': '0-3,^2'}, 3),
    ({'cpu_shared_set': '1', 'cpu_dedicated_set': '0'}, 1),
    ({'cpu_shared_set': '0-3,^2', 'cpu_dedicated_set': '4-7'}, 3),
    ({'cpu_dedicated_set': '2-7'}, 0),
    ({'vcpu_pin_set': '1-6', 'cpu_shared_set': '0'}, 6),
    ({'vcpu_pin_set': '1-6', 'reserved_host_cpus': 1}, 6),
    ({'reserved_host_cpus': 2}, 8),
])
def test_vcpu_follows_the_cpu_sets(options, vcpus):
    assert sizing.vcpus(ONLINE, sizing.shared_cpus(**options)) == vcpus


@pytest.mark.parametrize('options, message', [
    ({'cpu_shared_set': '0-4', 'cpu_dedicated_set': '4-7'},
     'cpu_shared_set and cpu_dedicated_set must be disjoint, both name '
     'CPUs 4'),
    ({'cpu_shared_set': '0-3', 'reserved_host_cpus': 1},
     'reserved_host_cpus cannot be set beside'),
    ({'cpu_dedicated_set': '4-7', 'reserved_host_cpus': 1},
     'reserved_host_cpus cannot be set beside'),
    ({'vcpu_pin_set': '0-3', 'cpu_dedicated_set': '4-7'},
     'vcpu_pin_set cannot be set beside'),
    ({'cpu_shared_set': '^1'}, "cpu_shared_set: '^1' names no CPU"),
    ({'cpu_dedicated_set': '0-1,^0-1'},
     "cpu_dedicated_set: '0-1,^0-1' names no"),
    ({'vcpu_pin_set': '2-1'}, "vcpu_pin_set: invalid range expression"),
])
def test_what_nova_compute_refuses_is_refused(options, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        sizing.shared_cpus(**options)


def test_cpus_that_are_not_online_are_refused():
    with pytest.raises(ValueError, match=re.escape(
            'names CPUs 8,9 that are not online (online: 0,1,2,3,4,5,6,7)')):
        sizing.vcpus(ONLINE, sizing.shared_cpus(cpu_shared_set='6-9'))


DF = {'stats': {'total_bytes': 3 * 1024 ** 4 + 1024 ** 3 - 1},
      'pools': [{'name': 'vms', 'stats': {'max_avail': 1}}]}


def test_rbd_disk_is_the_clusters_raw_size():
    assert sizing.ceph_disk_gb(DF, 'vms') == 3 * 1024


@pytest.mark.parametrize('df, message', [
    (DF, 'Ceph has no pool rbd'),
    ({'pools': []}, 'ceph df gave no pools and stats.total_bytes'),
    ([], 'ceph df gave no pools'),
    ({'stats': {'total_bytes': float('inf')}, 'pools': [{'name': 'vms'}]},
     'ceph df gave no pools and stats.total_bytes'),
])
def test_a_ceph_answer_without_the_pool_is_refused(df, message):
    with pytest.raises(ValueError, match=message):
        sizing.ceph_disk_gb(df, 'rbd')
