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

"""pytest set-up of the unit tests, which run without Nova.

* ``tox -e py3`` installs no Nova, while the quick start's venv has it for
  the functional tests: Nova is made unimportable here, so that a unit test
  needing it fails in both (tests that need Nova are functional tests;
  ``test_layout`` names them). Not in a process that has imported Nova
  already (``pytest tests``, the functional tests collected first).
* Every unit test keeps opie-bot's data directory in its own tmp_path.
"""
import importlib.metadata
import sys

import pytest

from opie.bot.state import datadir
from opie.nova import compat

sys.modules.setdefault('nova', None)


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(datadir.ENV, str(tmp_path / 'opie-bot-data'))


@pytest.fixture
def installed_nova(monkeypatch):
    """The Nova release ``importlib.metadata`` reports, as ``opie-manage
    audit`` reads it: the supported one, whether or not Nova is installed
    here; call it with another (None: not installed) to change it."""
    real = importlib.metadata.version
    release = {'nova': '%d.0.0' % compat.SUPPORTED_MAJOR}

    def version(name):
        if name not in release:
            return real(name)
        if release[name] is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return release[name]

    monkeypatch.setattr(importlib.metadata, 'version', version)
    return lambda installed: release.update(nova=installed)
