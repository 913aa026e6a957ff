"""The demo cloud's computes: the paper's testbed hosts whose servers run
their user data (:mod:`opie.testing.guests`)."""
from opie.testing import guests
from opie.testing import harness


class AgentDriver(guests.RunsUserData, harness.PaperDriver):
    """A compute of the demo cloud; ``guests`` is set by the cloud."""
