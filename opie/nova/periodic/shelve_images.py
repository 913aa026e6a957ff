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

"""Clean up the shelve snapshots that preemption in shelve mode leaves.

The scheduler shelves a victim as its service user
(:mod:`~opie.nova.request.terminate`),
so Nova uploads the snapshot into the service user's project and shares
it with the victim's project (as a member), which can then unshelve.
Nova deletes a shelve snapshot with the context of whoever unshelves or
deletes the server: the owner, a mere member of the image, whom Glance
refuses, so every such snapshot would outlive its use.

The scheduler process that holds the reconciler's lease therefore deletes,
every ``[opie] reconcile_interval`` seconds, each image of the service
user's project that

* is a shelve snapshot (name ``*-shelved``, ``image_type = snapshot``,
  ``instance_uuid`` set) of a server of another project, and
* is no longer the snapshot of a shelved server: its server is deleted,
  or has no task under way and no longer points at this image
  (``shelved_image_id``, which Nova drops once an unshelve succeeds).

An image still in use (the server shelved on it, or being unshelved) is
never touched.
"""
from oslo_log import log as logging

from nova import context as nova_context
from nova import exception
from nova.image import glance
from nova import objects

LOG = logging.getLogger(__name__)


def clean(context, image_api=None):
    """Delete the unused shelve snapshots of ``context``'s project (the
    service user's); the ids deleted."""
    image_api = image_api or glance.API()
    deleted = []
    for image in image_api.get_all(context, filters={
            'owner': context.project_id, 'image_type': 'snapshot'}):
        try:
            if not (_shelve_snapshot(image, context.project_id)
                    and _unused(image, context.project_id)):
                continue
            image_api.delete(context, image['id'])
        except exception.ImageNotFound:
            continue
        except Exception:
            # One image (protected, refused) must not stop the others.
            LOG.exception('OPIE: could not clean shelve snapshot %s',
                          image['id'])
            continue
        LOG.info('OPIE: deleted shelve snapshot %s of instance %s, no '
                 'longer in use', image['id'],
                 image['properties']['instance_uuid'])
        deleted.append(image['id'])
    return deleted


def _shelve_snapshot(image, project_id):
    props = image.get('properties', {})
    # Nova's image API has the owner at the top level; its test fixture
    # among the properties.
    owner = image.get('owner') or props.get('owner')
    return (owner == project_id and image.get('name', '').endswith('-shelved')
            and props.get('image_type') == 'snapshot'
            and props.get('instance_uuid'))


def _unused(image, project_id):
    """Whether no server is (or is being) shelved on ``image`` any more,
    for a server of another project than ``project_id``."""
    uuid = image['properties']['instance_uuid']
    admin = nova_context.get_admin_context()
    try:
        mapping = objects.InstanceMapping.get_by_instance_uuid(admin, uuid)
        with nova_context.target_cell(admin, mapping.cell_mapping) as cctxt:
            # Not read_deleted: a deleted instance is not found, and its
            # system metadata keys Nova removed stay removed.
            instance = objects.Instance.get_by_uuid(
                cctxt, uuid, expected_attrs=['system_metadata'])
    except (exception.InstanceMappingNotFound, exception.InstanceNotFound):
        return True
    if instance.project_id == project_id:
        # The service project's own server: not a victim's snapshot.
        return False
    # Nova drops shelved_image_id once an unshelve succeeds: until then
    # the server needs the image, whatever its state says (an operator
    # may have reset it).
    return instance.task_state is None and \
        instance.system_metadata.get('shelved_image_id') != image['id']
