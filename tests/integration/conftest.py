"""The integration tests drive a running OPIE lab (``opie-lab up``)."""
import pytest

from tests.integration import lab


@pytest.fixture(autouse=True)
def empty_cloud():
    """Each test starts and leaves the lab without servers."""
    why = lab.require_up()
    if why:
        pytest.fail(why, pytrace=False)
    lab.delete_all()
    yield
    lab.delete_all()
