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

"""The lab's configuration files: loopback only, computes without a
database, the settings the integration tests rely on."""
import configparser
import re

import pytest

from opie.lab import configs
from opie.lab import settings


@pytest.fixture
def lab(tmp_path, monkeypatch):
    # Paste files come from the venv; any file will do here.
    monkeypatch.setattr(configs.shutil, 'copy', lambda src, dst: None)
    lab = settings.Lab(tmp_path, computes=2)
    for write in (configs.keystone, configs.placement, configs.glance,
                  configs.neutron, configs.nova):
        write(lab)
    for index in (1, 2):
        configs.nova_compute(lab, index)
        configs.gunicorn(lab, 'nova-api')
    configs.gunicorn(lab, 'neutron')
    return lab


def _ini(path):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path)
    return parser


def test_every_address_is_loopback(lab):
    written = [p for p in lab.etc.rglob('*') if p.is_file()]
    assert len(written) >= 9
    for path in written:
        text = path.read_text()
        for host in re.findall(r'(?:https?|rabbit|mysql\+pymysql)://'
                               r'(?:[^@/\s]*@)?([^:/\s]+)', text):
            assert host == settings.HOST, (path, host)
        assert '0.0.0.0' not in text, path


def test_computes_have_no_database_and_own_identity(lab):
    first = _ini(configs.compute_conf(lab, 1))
    second = _ini(configs.compute_conf(lab, 2))
    for conf in (first, second):
        assert not conf.has_section('database')
        assert not conf.has_section('api_database')
        assert conf['DEFAULT']['compute_driver'] == 'opie_lab.LabDriver'
    assert first['DEFAULT']['host'] != second['DEFAULT']['host']
    # Nova keeps a compute's identity (compute_id) under state_path.
    assert first['DEFAULT']['state_path'] != second['DEFAULT']['state_path']


def test_nova_uses_unified_limits_with_nothing_required(lab):
    quota = _ini(lab.etc / 'nova' / 'nova.conf')['quota']
    assert quota['driver'] == 'nova.quota.UnifiedLimitsDriver'
    assert quota['unified_limits_resource_strategy'] == 'require'
    assert quota['unified_limits_resource_list'] == ''


def test_two_scheduler_workers(lab):
    assert _ini(lab.etc / 'nova' / 'nova.conf')['scheduler']['workers'] \
        == '2'


def test_gunicorn_configures_neutron_mappers_only(lab):
    neutron = (lab.etc / 'neutron' / 'gunicorn.conf.py').read_text()
    nova = (lab.etc / 'nova-api' / 'gunicorn.conf.py').read_text()
    assert 'configure_mappers' in neutron
    assert 'configure_mappers' not in nova
    namespace = {}
    exec(compile(nova, 'gunicorn.conf.py', 'exec'), namespace)
    assert namespace['bind'] == '127.0.0.1:8774'
    assert namespace['wsgi_app'] == 'nova.wsgi.osapi_compute:application'
