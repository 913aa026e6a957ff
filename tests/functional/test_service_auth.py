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

"""Whose credentials the scheduler shelves victims with."""
import types

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1.identity import generic
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import plugin
from nova import test
from oslo_config import cfg
import pytest

from opie.nova import conf as opie_conf
from opie.nova.request import terminate

PASSWORD = ('auth_type = password\nauth_url = http://keystone.test/v3\n'
            'username = %s\npassword = p\nproject_name = service\n'
            'user_domain_name = Default\nproject_domain_name = Default\n')


def nova_conf(tmp_path, text):
    """A nova.conf with Nova's [service_user] and OPIE's [opie] groups."""
    path = tmp_path / 'nova.conf'
    path.write_text(text)
    conf = cfg.ConfigOpts()
    conf(['--config-file', str(path)], project='nova')
    # As opie_conf.register_opts, once nova.conf is read as in the
    # scheduler, but in a group of this conf's own: keystoneauth adds the
    # plugin's options to the group object, which Nova's CONF shares.
    conf.register_opts(opie_conf.opie_opts, group=opie_conf.GROUP_NAME)
    for group in ('service_user', opie_conf.GROUP_NAME):
        ks_loading.register_auth_conf_options(conf, group)
        ks_loading.register_session_conf_options(conf, group)
    return conf


def test_novas_service_user_comes_first(tmp_path):
    conf = nova_conf(tmp_path, '[service_user]\n' + PASSWORD % 'nova'
                     + '[opie]\n' + PASSWORD % 'opie')

    group, auth = opie_conf.load_service_auth(conf, opie_conf.SHELVE)

    assert group == 'service_user'
    assert isinstance(auth, generic.Password)
    assert auth._username == 'nova'


def test_the_opie_group_is_the_fallback(tmp_path):
    conf = nova_conf(tmp_path, '[opie]\n' + PASSWORD % 'opie')

    group, auth = opie_conf.load_service_auth(conf, opie_conf.SHELVE)

    assert (group, auth._username) == ('opie', 'opie')


def test_shelve_mode_without_credentials_does_not_start(tmp_path):
    with pytest.raises(opie_conf.ConfigError,
                       match='needs service credentials'):
        opie_conf.load_service_auth(nova_conf(tmp_path, ''),
                                    opie_conf.SHELVE)


def test_delete_mode_needs_none(tmp_path):
    conf = nova_conf(tmp_path, '[service_user]\n' + PASSWORD % 'nova')

    assert opie_conf.load_service_auth(conf) is None


class Refused(plugin.BaseAuthPlugin):
    """Credentials Keystone refuses."""

    def get_access(self, session):
        raise ks_exceptions.Unauthorized('The request you have made '
                                         'requires authentication.')


class Login(test.NoDBTestCase):
    """Nova's test case: the terminator needs Nova's RPC set up."""

    def test_a_service_user_keystone_refuses_stops_the_start(self):
        terminator = terminate.Terminator(
            types.SimpleNamespace(termination_mode=opie_conf.SHELVE),
            ('service_user', Refused()))

        self.assertRaisesRegex(
            opie_conf.ConfigError, r'the service user of \[service_user\] '
            'cannot log in: The request you have made requires',
            terminator.check_login)
