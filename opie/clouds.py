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

"""Which cloud a command talks to, read as the ``openstack`` client does.

``--os-cloud NAME`` (or ``OS_CLOUD``) names a cloud of clouds.yaml;
without one the ``OS_AUTH_URL``, ``OS_USERNAME``, ... variables describe
it.  openstacksdk's config loader reads both, so clouds.yaml's search
path, ``secure.yaml``, ``profile:``, ``regions:``, client certificates,
``*_endpoint_override`` and every keystoneauth1 plugin mean here exactly
what they mean to the ``openstack`` CLI.  ``opie-manage`` and ``opie-bot``
both connect through :func:`connect`.

Nothing here logs, prints or returns a credential: errors name options,
never values, and :attr:`Connection.secrets` lists the secret values so
that what the caller writes down (opie-bot's journal) can refuse them.
"""
import dataclasses

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import session as ks_session
import openstack.config
from openstack import exceptions as sdk_exceptions

SECRET_OPTIONS = ('password', 'token', 'application_credential_secret',
                  'passcode', 'client_secret', 'secret')


class ConfigError(Exception):
    """The cloud configuration cannot give a session; says why."""


@dataclasses.dataclass
class Connection:
    session: ks_session.Session
    region: object
    secrets: tuple = ()

    def endpoint_args(self, service_type):
        """keystoneauth1 arguments that find ``service_type``'s endpoint
        (region, interface, any ``*_endpoint_override``)."""
        return {'service_type': service_type,
                'region_name':
                    self.region.get_region_name(service_type) or None,
                'interface': self.region.get_interface(service_type),
                'endpoint_override': self.region.get_endpoint(service_type)}


def connect(cloud=None, region_name=None):
    """A :class:`Connection` to ``cloud`` (else ``OS_CLOUD``, else the
    ``OS_*`` variables), or :class:`ConfigError`."""
    try:
        region = openstack.config.OpenStackConfig().get_one(
            cloud=cloud, region_name=region_name)
        session = region.get_session()
    except sdk_exceptions.ConfigException as exc:
        raise ConfigError('cloud configuration: %s' % _one_line(exc)) \
            from None
    except ks_exceptions.MissingRequiredOptions as exc:
        raise ConfigError(
            'no usable cloud credentials (missing %s): give --os-cloud, or '
            'set OS_CLOUD or the OS_AUTH_URL, OS_USERNAME, ... variables'
            % ', '.join(o.dest for o in exc.options)) from None
    except ks_exceptions.NoMatchingPlugin as exc:
        raise ConfigError('cloud configuration: unknown auth_type %r'
                          % exc.name) from None
    auth = region.config.get('auth') or {}
    secrets = tuple(str(v) for k, v in auth.items()
                    if k.replace('-', '_') in SECRET_OPTIONS and v)
    return Connection(session, region, secrets)


def _one_line(exc):
    return ' '.join(str(exc).split())[:300]
