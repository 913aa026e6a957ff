"""A keystoneauth1 session from clouds.yaml or ``OS_*`` variables.

``--os-cloud NAME`` (or ``OS_CLOUD``) reads the cloud ``NAME`` of the
first clouds.yaml found (``OS_CLIENT_CONFIG_FILE``, ``./clouds.yaml``,
``~/.config/openstack/clouds.yaml``, ``/etc/openstack/clouds.yaml``);
without one the ``OS_*`` variables are read as the ``openstack`` client
does.  Any keystoneauth1 plugin works (``password``, ``token``,
``v3applicationcredential``, ``admin_token``, ``none``...); with
``OS_APPLICATION_CREDENTIAL_ID`` or ``_NAME`` set the default is an
application credential, else a password.

Only keystoneauth1's own loaders read the credentials: nothing here logs,
prints or returns them, and errors name options, never values.
:func:`secrets` lists the secret values so the journal can refuse them.
"""
import dataclasses
import os

from keystoneauth1 import loading
from keystoneauth1 import session as ks_session
from keystoneauth1 import exceptions as ks_exceptions
import yaml

SEARCH = ('clouds.yaml', '~/.config/openstack/clouds.yaml',
          '/etc/openstack/clouds.yaml')
SECRET_OPTIONS = ('password', 'token', 'application_credential_secret',
                  'passcode', 'client_secret')


class AuthError(Exception):
    """The cloud configuration cannot give a session; says why."""


@dataclasses.dataclass
class Connection:
    session: ks_session.Session
    region_name: str = None
    interface: str = 'public'
    # service type -> endpoint override
    endpoints: dict = dataclasses.field(default_factory=dict)
    secrets: tuple = ()

    def endpoint_args(self, service_type):
        return {'service_type': service_type,
                'region_name': self.region_name,
                'interface': self.interface,
                'endpoint_override': self.endpoints.get(service_type)}


def _clouds_file(environ):
    explicit = environ.get('OS_CLIENT_CONFIG_FILE')
    if explicit:
        return explicit
    for path in SEARCH:
        path = os.path.expanduser(path)
        if os.path.exists(path):
            return path
    return None


def _cloud_entry(name, environ):
    path = _clouds_file(environ)
    if path is None:
        raise AuthError('cloud %r: no clouds.yaml found (looked at '
                        '$OS_CLIENT_CONFIG_FILE and %s)'
                        % (name, ', '.join(SEARCH)))
    try:
        with open(path, encoding='utf-8') as f:
            document = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise AuthError('%s: cannot read: %s' % (
            path, ' '.join(str(exc).split()))) from None
    clouds = document.get('clouds') if isinstance(document, dict) else None
    if not isinstance(clouds, dict) or name not in clouds:
        raise AuthError('%s: no cloud %r' % (path, name))
    entry = clouds[name]
    if not isinstance(entry, dict):
        raise AuthError('%s: cloud %r is not a mapping' % (path, name))
    return entry


def _plugin(auth_type, given, source):
    try:
        loader = loading.get_plugin_loader(auth_type)
    except ks_exceptions.NoMatchingPlugin:
        raise AuthError('%s: unknown auth_type %r' % (source, auth_type)) \
            from None
    options = {}
    known = set()
    for opt in loader.get_options():
        names = [opt.dest] + [o.dest for o in opt.deprecated]
        known.update(names)
        for name in names:
            if given.get(name) not in (None, ''):
                options[opt.dest] = given[name]
                break
    unknown = sorted(set(given) - known)
    if unknown:
        raise AuthError('%s: auth_type %s takes no option %s' % (
            source, auth_type, ', '.join(unknown)))
    try:
        return loader.load_from_options(**options), [
            str(v) for k, v in options.items() if k in SECRET_OPTIONS]
    except ks_exceptions.MissingRequiredOptions as exc:
        raise AuthError('%s: missing %s' % (source, ', '.join(
            o.dest for o in exc.options))) from None


def _from_cloud(name, environ):
    entry = _cloud_entry(name, environ)
    auth = entry.get('auth') or {}
    if not isinstance(auth, dict):
        raise AuthError('cloud %r: auth is not a mapping' % name)
    auth = {k.replace('-', '_'): v for k, v in auth.items()}
    plugin, secrets = _plugin(entry.get('auth_type', 'password'), auth,
                              'cloud %r' % name)
    endpoints = {k[:-len('_endpoint_override')].replace('_', '-'): v
                 for k, v in entry.items()
                 if k.endswith('_endpoint_override')}
    return plugin, secrets, {
        'region_name': entry.get('region_name'),
        'interface': entry.get('interface', 'public'),
        'endpoints': endpoints,
        'verify': entry.get('cacert', entry.get('verify', True))}


def _from_environ(environ):
    given = {k[3:].lower(): v for k, v in environ.items()
             if k.startswith('OS_')}
    if not given.get('auth_url') and not given.get('endpoint'):
        raise AuthError('no cloud given: use --os-cloud, set OS_CLOUD, or '
                        'set the OS_AUTH_URL, OS_USERNAME, ... variables')
    auth_type = given.pop('auth_type', None) or (
        'v3applicationcredential'
        if given.get('application_credential_id')
        or given.get('application_credential_name') else 'password')
    settings = {'region_name': given.pop('region_name', None),
                'interface': given.pop('interface', None) or 'public',
                'endpoints': {},
                'verify': given.pop('cacert', None) or True}
    for key in [k for k in given if k.endswith('_endpoint_override')]:
        settings['endpoints'][key[:-len('_endpoint_override')].replace(
            '_', '-')] = given.pop(key)
    # OS_* also carries settings of other tools; only the plugin's count.
    loader = _safe_loader(auth_type)
    if loader is not None:
        known = set()
        for opt in loader.get_options():
            known.update([opt.dest] + [o.dest for o in opt.deprecated])
        given = {k: v for k, v in given.items() if k in known}
    plugin, secrets = _plugin(auth_type, given, 'OS_* variables')
    return plugin, secrets, settings


def _safe_loader(auth_type):
    try:
        return loading.get_plugin_loader(auth_type)
    except ks_exceptions.NoMatchingPlugin:
        return None


def connect(cloud=None, environ=None):
    """A :class:`Connection` for ``cloud`` (clouds.yaml) or ``OS_*``."""
    environ = os.environ if environ is None else environ
    cloud = cloud or environ.get('OS_CLOUD')
    if cloud:
        plugin, secrets, settings = _from_cloud(cloud, environ)
    else:
        plugin, secrets, settings = _from_environ(environ)
    session = ks_session.Session(auth=plugin, verify=settings['verify'],
                                 timeout=60)
    return Connection(session, settings['region_name'],
                      settings['interface'], settings['endpoints'],
                      tuple(secrets))


def describe(exc):
    """One line for an error of keystoneauth1 or novaclient."""
    if isinstance(exc, ks_exceptions.ConnectFailure):
        return 'cannot reach the cloud: %s' % _first_line(exc)
    if isinstance(exc, (ks_exceptions.Unauthorized,)) or \
            getattr(exc, 'http_status', None) == 401 or \
            getattr(exc, 'code', None) == 401:
        return 'the cloud refused the credentials (HTTP 401)'
    if isinstance(exc, ks_exceptions.EndpointNotFound):
        return 'the cloud has no such service: %s' % _first_line(exc)
    return 'cloud error: %s' % _first_line(exc)


def _first_line(exc):
    return ' '.join(str(exc).split())[:300]
