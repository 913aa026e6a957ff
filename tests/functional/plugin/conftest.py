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

"""Fixtures of the plugin's fast tests (:mod:`.cloud`): each takes
milliseconds; what needs a real Nova and Placement (wiring, races, moves)
is in the slower tests beside this directory."""
import pytest

import nova.conf
from oslo_config import fixture as config_fixture

from opie.nova import conf as opie_conf
from tests.functional.plugin import cloud as cloud_mod


@pytest.fixture
def opie_options():
    """Set ``[opie]`` options of Nova's CONF for one test."""
    config = config_fixture.Config(nova.conf.CONF)
    config.setUp()
    yield lambda **options: config.config(group=opie_conf.GROUP_NAME,
                                          **options)
    config.cleanUp()


@pytest.fixture
def cloud(opie_options):
    """An empty :class:`.cloud.Cloud`, the ``[opie]`` options restored
    after the test."""
    return cloud_mod.Cloud()
