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

"""The controller's Keystone application credential.

The controller (:mod:`opie.bot.controller`) runs on a server of the
tenant's project and needs to act for the tenant for as long as the job
may run, while the tenant's machine is off.  It gets an application
credential the tenant's client creates, as narrow as Keystone allows for
what it does:

* **roles**: ``member`` only (and ``swiftoperator`` for a Swift store when
  the tenant has it, which Swift's default ``operator_roles`` require),
  never ``admin`` or any other role the tenant holds;
* **unrestricted=False**: it cannot create or delete application
  credentials or trusts, so a stolen secret cannot outlive its expiry;
* **expires_at**: past the job's horizon (ten deadlines, in wall time)
  plus a margin, so it dies on its own if nothing deletes it;
* **no access rules**: Nova calls Glance and Neutron on the controller's
  behalf with its token, so rules would have to list their paths too, and
  keystonemiddleware refuses every token with access rules on a service
  whose ``[keystone_authtoken] service_type`` is unset (the lab, and
  many deployments): the job would fail at its first call.

Keystone also refuses a restricted credential the deletion of itself, so
the tenant's side deletes it once the job is over (:mod:`controller`).

A cloud without Keystone (``auth_type: admin_token``, the demo cloud) has
no credential to make: the controller gets the token the tenant gave.
"""
import datetime

from keystoneauth1 import adapter
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import token_endpoint

# The role that lets a project member create and delete its servers and
# objects; optional roles are added only when the tenant holds them.
ROLE = 'member'
SWIFT_ROLE = 'swiftoperator'
# Past the horizon: the controller still deletes what is left then.
MARGIN = datetime.timedelta(hours=1)


class CredentialError(Exception):
    """Keystone refused the credential (policy, roles); one line."""


def keystone_less(conn):
    """True for a bare token on an endpoint (no Keystone to ask)."""
    return isinstance(conn.session.auth, token_endpoint.Token)


def _identity(conn):
    return adapter.Adapter(conn.session, service_type='identity',
                           version=(3, 0),
                           interface=conn.region.get_interface('identity'),
                           region_name=conn.region.get_region_name(
                               'identity') or None)


def _access(conn):
    """(user id, role names) of the tenant's token."""
    access = conn.session.auth.get_access(conn.session)
    return access.user_id, access.role_names


def roles(conn, swift):
    """The roles the controller's credential gets, or
    :class:`CredentialError` if the tenant lacks ``member``."""
    held = set(_access(conn)[1])
    if ROLE not in held:
        raise CredentialError(
            "the controller needs the role %r in the project, which your "
            "credentials lack (they have %s)" % (
                ROLE, ', '.join(sorted(held)) or 'none'))
    return [ROLE] + ([SWIFT_ROLE] if swift and SWIFT_ROLE in held else [])


def create(conn, name, lifetime_s, swift):
    """An application credential ``name`` for the controller: ``{id,
    secret, expires_at}``, or :class:`CredentialError` in one line."""
    expires = (datetime.datetime.now(datetime.timezone.utc)
               + datetime.timedelta(seconds=lifetime_s) + MARGIN)
    body = {'application_credential': {
        'name': name, 'unrestricted': False,
        'description': 'opie-bot controller of job %s' % name,
        'roles': [{'name': r} for r in roles(conn, swift)],
        'expires_at': expires.strftime('%Y-%m-%dT%H:%M:%S.000000Z')}}
    user = _access(conn)[0]
    try:
        resp = _identity(conn).post(
            '/users/%s/application_credentials' % user, json=body)
    except ks_exceptions.HttpError as exc:
        raise CredentialError(
            'keystone refused the controller\'s application credential '
            '(HTTP %s%s)' % (exc.http_status, ': %s' % exc.message
                             if exc.message else '')) from None
    made = resp.json()['application_credential']
    return {'id': made['id'], 'secret': made['secret'],
            'expires_at': made.get('expires_at')}


def delete(conn, credential_id):
    """Delete the credential; True once it is gone (or was)."""
    resp = _identity(conn).delete(
        '/users/%s/application_credentials/%s' % (
            _access(conn)[0], credential_id), raise_exc=False)
    return resp.status_code in (204, 404)


def cloud_entry(conn, credential):
    """The controller's clouds.yaml entry: the tenant's cloud (region,
    interface, endpoint overrides) with the credential as its auth."""
    config = conn.region.config
    entry = {key: value for key, value in config.items()
             if key in ('region_name', 'interface', 'identity_api_version')
             or key.endswith('_endpoint_override')}
    # A CA bundle is a path on the tenant's machine: the image's own
    # bundle serves the controller; turning checks off carries over.
    if config.get('verify') is False:
        entry['verify'] = False
    if credential is None:
        entry.update(auth_type=config.get('auth_type'),
                     auth=dict(config.get('auth') or {}))
        return entry
    entry.update(auth_type='v3applicationcredential', auth={
        'auth_url': (config.get('auth') or {}).get('auth_url'),
        'application_credential_id': credential['id'],
        'application_credential_secret': credential['secret']})
    return entry
