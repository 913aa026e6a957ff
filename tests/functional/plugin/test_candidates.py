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
