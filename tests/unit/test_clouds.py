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

"""opie.clouds: sessions as the openstack CLI makes them; errors show no
secret."""
import os
from unittest import mock

import pytest
import yaml

from keystoneauth1 import token_endpoint
from keystoneauth1.identity import generic
from keystoneauth1.identity import v3

from opie import clouds


def connect(environ, cloud=None):
    """:func:`clouds.connect` with ``environ`` as the only variables."""
    with mock.patch.dict(os.environ, environ, clear=True):
        return clouds.connect(cloud)


def files(tmp_path, entry, secure=None):
    path = tmp_path / 'clouds.yaml'
    path.write_text(yaml.safe_dump({'clouds': {'c': entry}}))
    env = {'OS_CLIENT_CONFIG_FILE': str(path), 'HOME': str(tmp_path)}
    if secure is not None:
        (tmp_path / 'secure.yaml').write_text(
            yaml.safe_dump({'clouds': {'c': secure}}))
        env['OS_CLIENT_SECURE_FILE'] = str(tmp_path / 'secure.yaml')
    return env


def test_clouds_yaml_admin_token(tmp_path):
    conn = connect(files(tmp_path, {
        'auth_type': 'admin_token',
        'auth': {'endpoint': 'http://127.0.0.1:1/v2.1', 'token': 'tok-123'}}),
        'c')

    assert isinstance(conn.session.auth, token_endpoint.Token)
    assert conn.secrets == ('tok-123',)


def test_password_in_secure_yaml_with_region_and_endpoint_override(
        tmp_path):
    env = files(tmp_path, {
        'auth': {'auth_url': 'http://127.0.0.1:1/identity/v3',
                 'username': 'u', 'project_name': 'p',
                 'user_domain_name': 'Default',
                 'project_domain_name': 'Default'},
        'regions': ['R1', 'R2'],
        'object_store_endpoint_override': 'http://127.0.0.1:2/v1/AUTH_p'},
        secure={'auth': {'password': 'pw-9'}})

    conn = connect(env, 'c')

    assert isinstance(conn.session.auth, generic.Password)
    assert conn.endpoint_args('object-store') == {
        'service_type': 'object-store', 'region_name': 'R1',
        'interface': 'public',
        'endpoint_override': 'http://127.0.0.1:2/v1/AUTH_p'}
    assert conn.secrets == ('pw-9',)


def test_os_variables_choose_application_credentials():
    conn = connect({
        'OS_AUTH_URL': 'http://127.0.0.1:1/identity/v3',
        'OS_AUTH_TYPE': 'v3applicationcredential',
        'OS_APPLICATION_CREDENTIAL_ID': 'ac-id',
        'OS_APPLICATION_CREDENTIAL_SECRET': 'ac-secret'})

    assert isinstance(conn.session.auth, v3.ApplicationCredential)
    assert conn.secrets == ('ac-secret',)


@pytest.mark.parametrize('entry, message', [
    ({'auth_type': 'password', 'auth': {'username': 'u',
                                        'password': 'pw-9'}},
     'missing auth_url'),
    ({'auth_type': 'nonsense', 'auth': {'password': 'pw-9'}},
     "unknown auth_type 'nonsense'"),
])
def test_bad_cloud_entries_name_the_option_not_the_value(tmp_path, entry,
                                                         message):
    with pytest.raises(clouds.ConfigError) as exc:
        connect(files(tmp_path, entry), 'c')
    assert message in str(exc.value)
    assert 'pw-9' not in str(exc.value)


def test_no_cloud_at_all_says_what_to_give(tmp_path):
    with pytest.raises(clouds.ConfigError, match='--os-cloud'):
        connect({'HOME': str(tmp_path)})


def test_unknown_cloud_name(tmp_path):
    with pytest.raises(clouds.ConfigError, match='other'):
        connect(files(tmp_path, {}), 'other')
