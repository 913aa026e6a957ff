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

"""The ``opie.preempt`` notification: what was preempted, whose, for whom.

One notification per host and request, sent once its victims have been
terminated (:mod:`.terminate`), at priority INFO with event type
``opie.preempt`` and publisher ``opie-scheduler.<host>``, on ``[opie]
notification_topics`` through Nova's notification transport (the driver
and transport of ``[oslo_messaging_notifications]``). The payload is a
JSON object whose ``version`` (:data:`VERSION`) follows the rule of Nova's
versioned notifications: a new field raises the minor version, a field
removed or changed in meaning the major one. Version 1.0::

    version               "1.0"
    reason                "request": room made for a scheduling request;
                          "room-taken": victims of a request that failed,
                          whose room others took meanwhile; "claimed" or
                          "reconcile": terminated by the reconciler
    request_id            the scheduling request's id (null if none)
    host, nodename        the compute the victims ran on
    mode                  "delete" or "shelve"
    cost                  the victim set's preemption cost, as the
                          scheduler ranked it (cost plugins price a set,
                          not each instance)
    requested_by_project  the project the room was made for (null if not
                          a request)
    request               the request: project_id, user_id, flavor,
                          vcpus, memory_mb, disk_gb, num_instances,
                          instance_uuid; or reason and instance_uuid null
    victims               one object each: uuid, project_id, user_id,
                          flavor (name), vcpus, memory_mb, disk_gb,
                          launched_at (ISO 8601 or null), terminated
                          (false if OPIE failed to; the reconciler
                          retries)

A victim's owner fields are read just before it is terminated; they are
null when Nova could not say (the victim was deleted meanwhile).

A notification never holds up a termination: every victim of a call is
terminated before its notifications are sent, and each send gives up
after :data:`RETRY` attempts to reach the message bus (Nova's default,
``[oslo_messaging_notifications] retry = -1``, would wait for the bus
forever). A notification that could not be sent is logged; the metrics
still count the preemption.
"""
from oslo_log import log as logging
import oslo_messaging as messaging

import nova.conf
from nova import context as nova_context
from nova import objects
from nova import rpc

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
EVENT_TYPE = 'opie.preempt'
VERSION = '1.0'
# Attempts to reach the message bus for one notification.
RETRY = 3


class Notifier:

    def __init__(self):
        self._notifier = None

    @property
    def notifier(self):
        if self._notifier is None:
            self._notifier = messaging.Notifier(
                rpc.NOTIFICATION_TRANSPORT,
                publisher_id='opie-scheduler.%s' % CONF.host,
                topics=CONF.opie.notification_topics,
                serializer=rpc.RequestContextSerializer(
                    rpc.JsonPayloadSerializer()),
                retry=RETRY)
        return self._notifier

    def preempted(self, preemption, done, owners, request_info, mode):
        """Notify that ``done`` of ``preemption``'s victims were
        terminated; never raises (nobody waits for a background task)."""
        try:
            self.notifier.info(nova_context.get_admin_context(), EVENT_TYPE,
                               payload(preemption, done, owners,
                                       request_info, mode))
        except Exception:
            LOG.exception('OPIE: could not notify the preemption on host %s',
                          preemption.host)


def payload(preemption, done, owners, request_info, mode):
    """The version 1.0 payload (a dict); ``owners`` from :func:`owners`,
    ``request_info`` from :func:`request_info` or ``{'reason': ...}``."""
    request = dict(request_info, instance_uuid=preemption.instance_uuid)
    request_id = request.pop('request_id', None)
    return {
        'version': VERSION,
        'reason': request.get('reason', 'request'),
        'request_id': request_id,
        'host': preemption.host,
        'nodename': preemption.nodename,
        'mode': mode,
        'cost': preemption.cost,
        'requested_by_project': request.get('project_id'),
        'request': request,
        'victims': [_victim(v, v in done, owners.get(v.uuid, {}))
                    for v in preemption.victims],
    }


def _victim(victim, terminated, owner):
    launched = victim.launched_at
    return {'uuid': victim.uuid,
            'project_id': owner.get('project_id'),
            'user_id': owner.get('user_id'),
            'flavor': owner.get('flavor'),
            'vcpus': victim.resources.vcpus,
            'memory_mb': victim.resources.memory_mb,
            'disk_gb': victim.resources.disk_gb,
            'launched_at': launched and launched.isoformat(),
            'terminated': terminated}


def owners(victims):
    """{uuid: {project_id, user_id, flavor}} of ``victims`` (on one host,
    so in one cell), read before they are terminated; {} if Nova cannot
    say (logged: the terminations go on)."""
    if not victims:
        return {}
    uuids = [v.uuid for v in victims]
    try:
        admin = nova_context.get_admin_context()
        mapping = objects.InstanceMapping.get_by_instance_uuid(admin,
                                                               uuids[0])
        with nova_context.target_cell(admin,
                                      mapping.cell_mapping) as cctxt:
            found = objects.InstanceList.get_by_filters(
                cctxt, {'uuid': uuids}, expected_attrs=['flavor'])
    except Exception:
        LOG.exception('OPIE: could not read the owners of victims %s', uuids)
        return {}
    return {i.uuid: {'project_id': i.project_id, 'user_id': i.user_id,
                     'flavor': i.flavor.name} for i in found}


def request_info(context, spec_obj):
    """What the notification says about a scheduling request."""
    flavor = spec_obj.flavor
    return {'request_id': context.request_id,
            'project_id': spec_obj.project_id,
            'user_id': spec_obj.user_id,
            'flavor': flavor.name,
            'vcpus': flavor.vcpus,
            'memory_mb': flavor.memory_mb,
            'disk_gb': flavor.root_gb + flavor.ephemeral_gb,
            'num_instances': spec_obj.num_instances}
