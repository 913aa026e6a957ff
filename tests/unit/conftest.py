"""Every unit test keeps opie-bot's data directory in its own tmp_path."""
import pytest

from opie.bot import datadir


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(datadir.ENV, str(tmp_path / 'opie-bot-data'))
