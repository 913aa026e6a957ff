"""Defects of ``run --controller`` that were open outside controller.py
(this test failed before ``opie-bot list`` asked the controller)."""
import json

import pytest

from tests.unit.bot import test_controller


@pytest.fixture
def tenant(tmp_path, monkeypatch, capsys):
    return test_controller.Tenant(tmp_path, monkeypatch, capsys)


def test_list_shows_a_job_its_controller_runs_as_running(tenant):
    """``opie-bot list`` reads live.jobs (the journal alone, no
    controller view): a job its controller drives shows as paused."""
    assert tenant.launch()[0] == 0

    code, out, err = tenant.cli('list', '-f', 'json')

    assert code == 0, err
    (st,) = json.loads(out)
    assert st['status'] == 'running'
