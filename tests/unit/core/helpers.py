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

"""Builders shared by the core's tests."""
import datetime

from hypothesis import strategies as st

from opie.core import host
from opie.core import resources as res

NOW = datetime.datetime(2026, 1, 15, 12, 0, tzinfo=datetime.timezone.utc)
SMALL = res.Resources(1, 2000, 20)
MEDIUM = res.Resources(2, 4000, 40)
LARGE = res.Resources(4, 8000, 80)
PAPER_HOST = res.Resources(8, 16384, 1000)
# Random resource vectors for the property tests of the victim search.
VECTORS = st.builds(res.Resources, st.integers(1, 8),
                    st.sampled_from([512, 1000, 2000, 4000, 8000]),
                    st.integers(0, 80))


def inst(name, resources, minutes=0, preemptible=True, eligible=True):
    return host.Instance(
        uuid='uuid-' + name, resources=resources, preemptible=preemptible,
        launched_at=NOW - datetime.timedelta(minutes=minutes),
        eligible=eligible, name=name)


def paper_host(name, instances):
    return host.Host.from_instances(name, PAPER_HOST, instances)
