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

"""Keystone's users, projects and catalog, the tenants' clouds.yaml, a
test image and the flavors: what DevStack creates after keystone starts.

Everything goes through the public APIs with openstacksdk, as an operator
would, except keystone's first admin (``keystone-manage bootstrap``).
"""
import subprocess
import sys

import openstack
import yaml

from opie.lab import settings

# (service type, name, port key, path of the catalog's URL)
CATALOG = (
    ('placement', 'placement', 'placement', ''),
    ('image', 'glance', 'glance', ''),
    ('network', 'neutron', 'neutron', ''),
    ('compute', 'nova', 'nova-api', '/v2.1'),
)
# Normal flavors (name, vCPUs, MB, GB), each with a preemptible twin; a
# compute holds four small, two medium or one large (the sizes of the
# opie-bot demo's job).
FLAVORS = (('small', 1, 2048, 10), ('medium', 2, 4096, 20),
           ('large', 4, 8192, 40))
IMAGE = 'lab-image'
# Services look each other up by 'internal', clients by 'public'.
INTERFACES = ('public', 'internal', 'admin')


def clouds(lab):
    """clouds.yaml: ``lab-admin`` and one ``lab-<tenant>`` per tenant."""
    def entry(user, project):
        return {'auth': {'auth_url': lab.url('keystone'), 'username': user,
                         'password': settings.PASSWORD,
                         'project_name': project,
                         'user_domain_name': 'Default',
                         'project_domain_name': 'Default'},
                'region_name': settings.REGION,
                'identity_api_version': 3}
    document = {'clouds': {'lab-admin': entry('admin', 'admin')}}
    for tenant in settings.TENANTS:
        document['clouds']['lab-%s' % tenant] = entry(tenant, tenant)
    lab.clouds_yaml.write_text(yaml.safe_dump(document))


def connect(lab, cloud='lab-admin'):
    config = openstack.config.OpenStackConfig(
        config_files=[str(lab.clouds_yaml)])
    return openstack.connection.Connection(
        config=config.get_one(cloud=cloud))


def keystone_manage(lab, *args):
    subprocess.run([sys.prefix + '/bin/keystone-manage', '--config-file',
                    lab.etc / 'keystone' / 'keystone.conf'] + list(args),
                   check=True, capture_output=True)


def keystone_first_admin(lab):
    for directory in ('fernet-keys', 'credential-keys'):
        (lab.data / 'keystone' / directory).mkdir(parents=True,
                                                  exist_ok=True)
    keystone_manage(lab, 'db_sync')
    keystone_manage(lab, 'fernet_setup', '--keystone-user', 'root',
                    '--keystone-group', 'root')
    keystone_manage(lab, 'credential_setup', '--keystone-user', 'root',
                    '--keystone-group', 'root')
    url = lab.url('keystone')
    keystone_manage(lab, 'bootstrap', '--bootstrap-password',
                    settings.PASSWORD, '--bootstrap-admin-url', url,
                    '--bootstrap-internal-url', url,
                    '--bootstrap-public-url', url,
                    '--bootstrap-region-id', settings.REGION)


def users_and_catalog(lab):
    conn = connect(lab)
    identity = conn.identity
    service_project = identity.create_project(name='service',
                                              domain_id='default')
    admin = identity.find_role('admin')
    service_role = identity.find_role('service')
    member = identity.find_role('member')
    for name in settings.SERVICE_USERS:
        user = identity.create_user(name=name, password=settings.PASSWORD,
                                    domain_id='default')
        for role in (admin, service_role):
            identity.assign_project_role_to_user(service_project, user,
                                                 role)
    for tenant in settings.TENANTS:
        project = identity.create_project(name=tenant, domain_id='default')
        user = identity.create_user(name=tenant,
                                    password=settings.PASSWORD,
                                    domain_id='default',
                                    default_project_id=project.id)
        identity.assign_project_role_to_user(project, user, member)
    for kind, name, port, path in CATALOG:
        service = identity.create_service(type=kind, name=name)
        for interface in INTERFACES:
            identity.create_endpoint(service_id=service.id,
                                     interface=interface,
                                     url=lab.url(port, path),
                                     region_id=settings.REGION)


def image(lab):
    conn = connect(lab)
    # Nova's fake driver never reads it: a few bytes make a valid image.
    conn.image.create_image(name=IMAGE, data=b'opie-lab' * 64,
                            disk_format='raw', container_format='bare',
                            visibility='public')


def flavors(lab):
    conn = connect(lab)
    for name, vcpus, ram, disk in FLAVORS:
        conn.compute.create_flavor(name=name, vcpus=vcpus, ram=ram,
                                   disk=disk, is_public=True)
        subprocess.run([sys.prefix + '/bin/opie-manage', 'flavor',
                        'create-preemptible', name, '--os-cloud',
                        'lab-admin'], check=True, capture_output=True,
                       env={'OS_CLIENT_CONFIG_FILE': str(lab.clouds_yaml),
                            'PATH': '/usr/bin:/bin'})
