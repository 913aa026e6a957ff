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

"""The demo cloud's computes: the paper's testbed hosts whose servers run
their user data (:mod:`opie.lab.guests`)."""
from opie.lab import guests
from opie.testing import harness


class AgentDriver(guests.RunsUserData, harness.PaperDriver):
    """A compute of the demo cloud; ``guests`` is set by the cloud."""
