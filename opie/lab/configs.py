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

"""The lab's configuration files, written fresh on every ``up``.

One file per service as a DevStack controller would have it, except that
everything points at 127.0.0.1 and lives under the lab directory. Nova's
OPIE settings are not written here: ``opie-manage nova-conf`` adds them,
as the DevStack plugin does (see :mod:`opie.lab.cli`).
"""
import configparser
import shutil
import sys

from opie.lab import faults
from opie.lab import settings

# Paste files pip installs under the venv's etc/.
PASTE = {'nova': 'api-paste.ini', 'neutron': 'api-paste.ini',
         'glance': 'glance-api-paste.ini'}
# The WSGI application of each API service.
WSGI_APPS = {
    'keystone': 'keystone.wsgi.api:application',
    'placement': 'placement.wsgi.api:application',
    'glance': 'glance.wsgi.api:application',
    'neutron': 'neutron.wsgi.api:application',
    'nova-api': 'nova.wsgi.osapi_compute:application',
    'nova-metadata': 'nova.wsgi.metadata:application',
    'metadata-proxy': 'opie.lab.metadata_proxy:application',
}


def write_ini(path, sections):
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str
    for section, options in sections.items():
        parser[section] = {k: str(v) for k, v in options.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, 'w') as f:
        parser.write(f)


def service_auth(lab, user):
    """keystoneauth1 password options of a service user."""
    return {
        'auth_type': 'password', 'auth_url': lab.url('keystone'),
        'username': user, 'password': settings.PASSWORD,
        'project_name': 'service', 'user_domain_name': 'Default',
        'project_domain_name': 'Default', 'region_name': settings.REGION,
    }


def authtoken(lab, user):
    return dict(service_auth(lab, user),
                www_authenticate_uri=lab.url('keystone'))


def _common(lab, service):
    return {'DEFAULT': {'debug': 'false', 'use_stderr': 'true'},
            'oslo_concurrency': {
                'lock_path': lab.data / service / 'locks'}}


def keystone(lab):
    sections = _common(lab, 'keystone')
    sections.update({
        'database': {'connection': lab.db_url('keystone')},
        'token': {'provider': 'fernet'},
        # bcrypt's least cost: the lab's passwords are published test
        # values, and at the default cost (12) every token issued took
        # 0.4 s of keystone's CPU, most of the lab's CPU in a test run
        # on two cores. Keystone's own tests do the same.
        'identity': {'password_hash_rounds': 4},
        # Token validation and role look-ups cached, as DevStack does
        # with memcached; keystone runs one gunicorn worker here, so an
        # in-process cache is coherent. Without it every API request's
        # token check cost keystone several database queries.
        'cache': {'enabled': 'true', 'backend': 'dogpile.cache.memory'},
        'fernet_tokens': {
            'key_repository': lab.data / 'keystone' / 'fernet-keys'},
        'credential': {
            'key_repository': lab.data / 'keystone' / 'credential-keys'},
    })
    write_ini(lab.etc / 'keystone' / 'keystone.conf', sections)


def placement(lab):
    sections = _common(lab, 'placement')
    sections.update({
        'placement_database': {'connection': lab.db_url('placement')},
        'api': {'auth_strategy': 'keystone'},
        'keystone_authtoken': authtoken(lab, 'placement'),
    })
    write_ini(lab.etc / 'placement' / 'placement.conf', sections)


def glance(lab):
    store = lab.data / 'glance'
    sections = _common(lab, 'glance')
    sections['DEFAULT'].update({
        'enabled_backends': 'fs:file',
        'worker_self_reference_url': lab.url('glance')})
    sections.update({
        'database': {'connection': lab.db_url('glance')},
        'glance_store': {'default_backend': 'fs'},
        'fs': {'filesystem_store_datadir': store / 'images'},
        'os_glance_staging_store': {
            'filesystem_store_datadir': store / 'staging'},
        'os_glance_tasks_store': {
            'filesystem_store_datadir': store / 'tasks'},
        'keystone_authtoken': authtoken(lab, 'glance'),
        'paste_deploy': {'flavor': 'keystone'},
    })
    write_ini(lab.etc / 'glance' / 'glance-api.conf', sections)
    _copy_paste(lab, 'glance')


def neutron(lab):
    """neutron-server's API with ML2 and no agents: networks and ports
    are records, which is all Nova's fake virt driver needs."""
    sections = _common(lab, 'neutron')
    sections['DEFAULT'].update({
        'core_plugin': 'ml2',
        # Neutron's port queries need the router plugin's models.
        'service_plugins': 'router',
        'auth_strategy': 'keystone', 'transport_url': lab.transport_url,
        'api_paste_config': lab.etc / 'neutron' / PASTE['neutron'],
        'notify_nova_on_port_status_changes': 'false',
        'notify_nova_on_port_data_changes': 'false',
    })
    sections.update({
        'database': {'connection': lab.db_url('neutron')},
        'keystone_authtoken': authtoken(lab, 'neutron'),
    })
    write_ini(lab.etc / 'neutron' / 'neutron.conf', sections)
    write_ini(lab.etc / 'neutron' / 'plugins' / 'ml2' / 'ml2_conf.ini', {
        'ml2': {'type_drivers': 'flat', 'project_network_types': '',
                'mechanism_drivers': '', 'extension_drivers': ''},
        'ml2_type_flat': {'flat_networks': '*'},
    })
    _copy_paste(lab, 'neutron')


def _nova_common(lab):
    """What every Nova service reads: RPC, the services it calls."""
    sections = _common(lab, 'nova')
    sections['DEFAULT'].update({
        'transport_url': lab.transport_url, 'my_ip': settings.HOST,
        'state_path': lab.data / 'nova',
    })
    sections.update({
        'service_user': dict(service_auth(lab, 'nova'),
                             send_service_user_token='true'),
        'placement': service_auth(lab, 'placement'),
        'neutron': service_auth(lab, 'neutron'),
        'glance': {'region_name': settings.REGION},
        'vnc': {'enabled': 'false'},
        'oslo_messaging_notifications': {'driver': 'messagingv2'},
        'notifications': {'notification_format': 'versioned'},
        'lab': {'faults_dir': faults.directory(lab)},
        # Quorum queues, as OpenStack advises for production: durable, so a
        # request cast while RabbitMQ restarts waits in its queue instead
        # of being routed nowhere before its consumer declares it again.
        'oslo_messaging_rabbit': {'rabbit_quorum_queue': 'true',
                                  'rabbit_transient_quorum_queue': 'true'},
    })
    return sections


def nova(lab):
    """nova.conf of the API, conductor and scheduler (one cell, one
    conductor, as DevStack's single-conductor mode)."""
    sections = _nova_common(lab)
    sections.update({
        'api_database': {'connection': lab.db_url('nova_api')},
        'database': {'connection': lab.db_url('nova')},
        'wsgi': {'api_paste_config': lab.etc / 'nova' / PASTE['nova']},
        'keystone_authtoken': authtoken(lab, 'nova'),
        # The metadata API answers requests the lab's metadata proxy
        # signed (opie.lab.metadata_proxy), and reads the database on each:
        # a guest sees a notice the moment it is given.
        'neutron': dict(service_auth(lab, 'neutron'),
                        service_metadata_proxy='true',
                        metadata_proxy_shared_secret=settings.PASSWORD),
        'api': {'metadata_cache_expiration': 0},
        'scheduler': {'workers': settings.SCHEDULER_WORKERS,
                      'discover_hosts_in_cells_interval': -1},
        'conductor': {'workers': 1},
        # Unified limits, so the operator can cap the preemptible classes
        # (class:CUSTOM_PREEMPTIBLE_*); no resource requires a limit, so
        # one without a limit is unlimited.
        'quota': {'driver': 'nova.quota.UnifiedLimitsDriver',
                  'unified_limits_resource_strategy': 'require',
                  'unified_limits_resource_list': ''},
        'oslo_limit': dict(service_auth(lab, 'nova'),
                           endpoint_service_type='compute',
                           endpoint_region_name=settings.REGION),
        # Every scheduler worker's Prometheus textfile, as node_exporter's
        # textfile collector would read them (opie-manage nova-conf adds
        # the rest of the group).
        'opie': {'metrics_dir': metrics_dir(lab)},
    })
    write_ini(lab.etc / 'nova' / 'nova.conf', sections)
    _copy_paste(lab, 'nova')


def metrics_dir(lab):
    """Where the schedulers' workers write their metrics (``[opie]
    metrics_dir``), one ``opie-scheduler.<host>.<worker>.prom`` each."""
    return lab.data / 'metrics'


def scheduler_conf(lab, index):
    """The file that makes scheduler ``index`` (from 2) another
    controller: its own host name and heartbeat, on top of nova.conf."""
    return lab.etc / 'nova' / ('nova-sched-%d.conf' % index)


def nova_scheduler(lab, index):
    write_ini(scheduler_conf(lab, index), {
        'DEFAULT': {'host': lab.scheduler_host(index)},
        'opie': {'heartbeat_path': lab.data / 'nova' / (
            'opie-heartbeat-%d.json' % index)},
    })


def compute_conf(lab, index):
    return lab.etc / 'nova' / ('nova-cpu-%s.conf' % index)


def provider_dir(lab, index):
    return lab.etc / 'nova' / ('provider-config-%s' % index)


def nova_compute(lab, index):
    """nova-cpu-N.conf, compute N's only file: as DevStack's nova-cpu.conf
    it has no database, computes reach it through the conductor."""
    vcpus, memory_mb, disk_gb = settings.COMPUTE_SIZE
    sections = _nova_common(lab)
    sections['DEFAULT'].update({
        'host': lab.compute_host(index),
        # Each compute keeps its own identity file (compute_id).
        'state_path': lab.data / 'nova' / lab.compute_host(index),
        'compute_driver': 'opie_lab.LabDriver',
        'cpu_allocation_ratio': 1.0, 'ram_allocation_ratio': 1.0,
        'disk_allocation_ratio': 1.0,
        'reserved_host_memory_mb': 0, 'reserved_host_disk_mb': 0,
    })
    sections['lab_compute'] = {'vcpus': vcpus, 'memory_mb': memory_mb,
                               'local_gb': disk_gb,
                               'guests_dir': lab.data / 'guests',
                               'metadata_url': lab.url('metadata-proxy')}
    write_ini(compute_conf(lab, index), sections)


def _copy_paste(lab, service):
    name = PASTE[service]
    shutil.copy(f'{sys.prefix}/etc/{service}/{name}',
                lab.etc / service / name)


# neutron's API reads Port.port_forwardings, a backref that exists only
# once SQLAlchemy has configured its mappers, which in a full deployment
# some other neutron process has done first.
NEUTRON_HOOK = """

def post_worker_init(worker):
    from sqlalchemy import orm
    orm.configure_mappers()
"""


def gunicorn(lab, service, workers=1, threads=8):
    """gunicorn.conf.py: gunicorn reads it from its working directory, so
    its command line stays bare (neutron parses ``sys.argv`` as its own)."""
    directory = lab.etc / service
    directory.mkdir(parents=True, exist_ok=True)
    (directory / 'gunicorn.conf.py').write_text(
        'wsgi_app = %r\nbind = %r\nworkers = %d\nthreads = %d\n'
        'worker_class = "gthread"\ntimeout = 300\n'
        # No keep-alive: a client reusing a connection the server is
        # closing as idle gets "Remote end closed connection" (seen on
        # keystone under 20 concurrent boots).
        'keepalive = 0\n'
        # No limit on the request line, as DevStack's uwsgi (buffer-size
        # 65535): Nova asks Neutron for the ports of every server it
        # lists in one query string, past gunicorn's 4094 bytes at about
        # 80 servers.
        'limit_request_line = 0\n%s' % (
            WSGI_APPS[service],
            '%s:%d' % (settings.HOST, settings.PORTS[service]),
            workers, threads, NEUTRON_HOOK if service == 'neutron' else ''))
    return directory
