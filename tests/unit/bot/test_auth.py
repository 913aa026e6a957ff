"""Sessions from clouds.yaml or OS_* variables; errors show no secret."""
import pytest
import yaml

from keystoneauth1 import token_endpoint
from keystoneauth1.identity import generic
from keystoneauth1.identity import v3

from opie.bot.openstack import auth


def clouds(tmp_path, entry):
    path = tmp_path / 'clouds.yaml'
    path.write_text(yaml.safe_dump({'clouds': {'c': entry}}))
    return {'OS_CLIENT_CONFIG_FILE': str(path)}


def test_clouds_yaml_admin_token(tmp_path):
    env = clouds(tmp_path, {'auth_type': 'admin_token',
                            'auth': {'endpoint': 'http://127.0.0.1:1/v2.1',
                                     'token': 'tok-123'}})

    conn = auth.connect('c', env)

    assert isinstance(conn.session.auth, token_endpoint.Token)
    assert conn.secrets == ('tok-123',)


def test_clouds_yaml_password_with_endpoint_override(tmp_path):
    env = clouds(tmp_path, {
        'auth': {'auth_url': 'http://127.0.0.1:1/identity/v3',
                 'username': 'u', 'password': 'pw-9', 'project_name': 'p',
                 'user_domain_name': 'Default',
                 'project_domain_name': 'Default'},
        'region_name': 'R1',
        'object_store_endpoint_override': 'http://127.0.0.1:2/v1/AUTH_p'})

    conn = auth.connect('c', env)

    assert isinstance(conn.session.auth, generic.Password)
    assert conn.region_name == 'R1'
    assert conn.endpoint_args('object-store')['endpoint_override'] == \
        'http://127.0.0.1:2/v1/AUTH_p'
    assert conn.secrets == ('pw-9',)


def test_os_variables_choose_application_credentials():
    conn = auth.connect(None, {
        'OS_AUTH_URL': 'http://127.0.0.1:1/identity/v3',
        'OS_APPLICATION_CREDENTIAL_ID': 'ac-id',
        'OS_APPLICATION_CREDENTIAL_SECRET': 'ac-secret',
        'OS_COMPUTE_API_VERSION': '2.1'})

    assert isinstance(conn.session.auth, v3.ApplicationCredential)
    assert conn.secrets == ('ac-secret',)


@pytest.mark.parametrize('entry, message', [
    ({'auth_type': 'password', 'auth': {'username': 'u',
                                        'password': 'pw-9'}},
     'missing auth_url'),
    ({'auth_type': 'admin_token', 'auth': {'endpoint': 'x', 'token': 'pw-9',
                                           'colour': 'red'}},
     'takes no option colour'),
    ({'auth_type': 'nonsense'}, "unknown auth_type 'nonsense'"),
])
def test_bad_cloud_entries_name_the_option_not_the_value(tmp_path, entry,
                                                         message):
    with pytest.raises(auth.AuthError) as exc:
        auth.connect('c', clouds(tmp_path, entry))
    assert message in str(exc.value)
    assert 'pw-9' not in str(exc.value)


def test_no_cloud_at_all_says_what_to_give():
    with pytest.raises(auth.AuthError, match='--os-cloud'):
        auth.connect(None, {})


def test_unknown_cloud_name(tmp_path):
    with pytest.raises(auth.AuthError, match="no cloud 'other'"):
        auth.connect('other', clouds(tmp_path, {}))
