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
from unittest import mock

from opie.nova import manager


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
