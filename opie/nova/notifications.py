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

"""OPIE's notifications, versioned as Nova's: what was preempted, whose,
for whom, and which victim OPIE failed to terminate.

``opie.preempt.start`` (:class:`PreemptionNoticePayload`) when a victim's
notice begins, ``opie.preempt.end`` (:class:`PreemptionPayload`) once a
host's victims have been terminated, ``opie.preempt.error``
(:class:`PreemptionErrorPayload`) for each victim OPIE could not
terminate. Each is in Nova's wire format, its payload a versioned object
made with Nova's own classes in namespace ``opie``, sent where Nova's
``[notifications] notification_format`` sends Nova's own. A notification
never holds up a termination: victims are terminated first, and each send
gives up after :data:`RETRY` attempts to reach the bus.

The payloads, their versions and where they go:
``doc/source/operator/notifications.rst``; why Nova's registries and
envelope classes are not used: ``doc/source/design/index.rst``, "Modules
in detail".
"""
from oslo_log import log as logging
import oslo_messaging as messaging

import nova.conf
from nova import context as nova_context
from nova.notifications.objects import base
from nova.notifications.objects import exception as nova_exception
from nova import objects
from nova.objects import base as nova_base
from nova.objects import fields
from nova import rpc

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
START = 'opie.preempt.start'
END = 'opie.preempt.end'
ERROR = 'opie.preempt.error'
PUBLISHER = 'opie-scheduler'
NAMESPACE = 'opie'
# Attempts to reach the message bus for one notification.
RETRY = 3


class _Payload(base.NotificationPayloadBase):
    """An OPIE payload: Nova's format, OPIE's namespace; built whole, from
    keyword arguments, and with no changes recorded (Nova drops them from
    its payloads too: every field of a new object is a change)."""
    OBJ_PROJECT_NAMESPACE = NAMESPACE

    def __init__(self, **values):
        super().__init__()
        for name, value in values.items():
            setattr(self, name, value)
        self.obj_reset_changes(recursive=True)


@nova_base.NovaObjectRegistry.register_if(False)
class PreemptionRequestPayload(_Payload):
    # Version 1.0: Initial version
    VERSION = '1.0'
    fields = {
        'request_id': fields.StringField(nullable=True),
        'project_id': fields.StringField(nullable=True),
        'user_id': fields.StringField(nullable=True),
        'flavor': fields.StringField(),
        'vcpus': fields.IntegerField(),
        'memory_mb': fields.IntegerField(),
        'disk_gb': fields.IntegerField(),
        'num_instances': fields.IntegerField(),
    }


@nova_base.NovaObjectRegistry.register_if(False)
class PreemptionVictimPayload(_Payload):
    # Version 1.0: Initial version
    # Version 1.1: cost
    VERSION = '1.1'
    fields = {
        'uuid': fields.UUIDField(),
        'project_id': fields.StringField(nullable=True),
        'user_id': fields.StringField(nullable=True),
        'flavor': fields.StringField(nullable=True),
        'vcpus': fields.IntegerField(),
        'memory_mb': fields.IntegerField(),
        'disk_gb': fields.IntegerField(),
        'launched_at': fields.DateTimeField(nullable=True),
        'terminated': fields.BooleanField(),
        'cost': fields.FloatField(nullable=True),
    }


@nova_base.NovaObjectRegistry.register_if(False)
class PreemptionRunnerUpPayload(_Payload):
    # Version 1.0: Initial version
    VERSION = '1.0'
    fields = {
        'host': fields.StringField(),
        'fits': fields.BooleanField(nullable=True),
        'tier': fields.IntegerField(nullable=True),
        'cost': fields.FloatField(nullable=True),
        'victims': fields.IntegerField(nullable=True),
        'weight': fields.FloatField(nullable=True),
        'why_lost': fields.StringField(),
    }


@nova_base.NovaObjectRegistry.register_if(False)
class PreemptionRefusalPayload(_Payload):
    # Version 1.0: Initial version
    VERSION = '1.0'
    fields = {
        'reason': fields.StringField(),
        'hosts': fields.IntegerField(),
    }


@nova_base.NovaObjectRegistry.register_if(False)
class PreemptionExplanationPayload(_Payload):
    # Version 1.0: Initial version
    VERSION = '1.0'
    fields = {
        'why': fields.StringField(),
        'ranked_by': fields.StringField(nullable=True),
        'ranking': fields.StringField(nullable=True),
        'offset': fields.FloatField(nullable=True),
        'victims_omitted': fields.IntegerField(),
        'runners_up': fields.ListOfObjectsField('PreemptionRunnerUpPayload'),
        'runners_up_omitted': fields.IntegerField(),
        'refused': fields.ListOfObjectsField('PreemptionRefusalPayload'),
    }


@nova_base.NovaObjectRegistry.register_if(False)
class _PreemptionBase(_Payload):
    """What both payloads say of the preemption."""
    fields = {
        'reason': fields.StringField(),
        'instance_uuid': fields.UUIDField(nullable=True),
        'host': fields.StringField(),
        'nodename': fields.StringField(),
        'mode': fields.StringField(),
        'request': fields.ObjectField('PreemptionRequestPayload',
                                      nullable=True),
    }


@nova_base.NovaObjectRegistry.register_if(False)
class PreemptionPayload(_PreemptionBase):
    # Version 1.0: Initial version
    # Version 1.1: explanation; victims are PreemptionVictimPayload 1.1
    VERSION = '1.1'
    fields = {
        'cost': fields.FloatField(),
        'victims': fields.ListOfObjectsField('PreemptionVictimPayload'),
        'explanation': fields.ObjectField('PreemptionExplanationPayload',
                                          nullable=True),
    }


@nova_base.NovaObjectRegistry.register_if(False)
class PreemptionErrorPayload(_PreemptionBase):
    # Version 1.0: Initial version
    # Version 1.1: its victim is a PreemptionVictimPayload 1.1 (cost)
    VERSION = '1.1'
    fields = {
        'victim': fields.ObjectField('PreemptionVictimPayload'),
        'fault': fields.ObjectField('ExceptionPayload'),
    }


@nova_base.NovaObjectRegistry.register_if(False)
class PreemptionNoticePayload(_PreemptionBase):
    # Version 1.0: Initial version
    VERSION = '1.0'
    fields = {
        'victim': fields.ObjectField('PreemptionVictimPayload'),
        'notice': fields.IntegerField(),
        'preempt_at': fields.DateTimeField(),
    }


# Every payload OPIE sends, or carries in one.
PAYLOADS = (PreemptionPayload, PreemptionErrorPayload,
            PreemptionNoticePayload,
            PreemptionRequestPayload, PreemptionVictimPayload,
            PreemptionExplanationPayload, PreemptionRunnerUpPayload,
            PreemptionRefusalPayload)


def topics():
    """The topics OPIE's notifications go to, by Nova's rule."""
    notification_format = CONF.notifications.notification_format
    found = []
    if notification_format in ('versioned', 'both'):
        found += CONF.notifications.versioned_notifications_topics
    if notification_format in ('unversioned', 'both'):
        found += CONF.opie.notification_topics
    return found


class Notifier:

    def __init__(self):
        self._notifier = None

    @property
    def notifier(self):
        if self._notifier is None:
            found = topics()
            self._notifier = messaging.Notifier(
                rpc.NOTIFICATION_TRANSPORT,
                publisher_id='%s:%s' % (PUBLISHER, CONF.host),
                driver=None if found else 'noop', topics=found,
                serializer=rpc.RequestContextSerializer(
                    rpc.JsonPayloadSerializer()),
                retry=RETRY)
        return self._notifier

    def preempted(self, preemption, done, owners, request_info, mode):
        """``opie.preempt.end``: ``done`` of ``preemption``'s victims were
        terminated; ``owners`` from :func:`owners`, ``request_info`` from
        :func:`request_info` or ``{'reason': ...}``."""
        costs = _costs(preemption)
        self._send('info', END, PreemptionPayload(
            cost=preemption.cost,
            victims=[_victim(v, v in done, owners, costs) for v in
                     preemption.victims],
            explanation=_explanation(preemption.explanation),
            **_preemption(preemption, request_info, mode)))

    def notice(self, preemption, victim, notice, preempt_at, owners,
               request_info, mode):
        """``opie.preempt.start``: ``victim`` of ``preemption`` is given
        ``notice`` seconds: its clean shutdown begins at ``preempt_at``."""
        self._send('info', START, PreemptionNoticePayload(
            victim=_victim(victim, False, owners, _costs(preemption)),
            notice=notice, preempt_at=preempt_at,
            **_preemption(preemption, request_info, mode)))

    def failed(self, preemption, victim, error, owners, request_info,
               mode):
        """``opie.preempt.error``: ``victim`` of ``preemption`` could not
        be terminated, for the exception ``error``."""
        self._send('error', ERROR, PreemptionErrorPayload(
            victim=_victim(victim, False, owners, _costs(preemption)),
            fault=nova_exception.ExceptionPayload.from_exception(error),
            **_preemption(preemption, request_info, mode)))

    def _send(self, priority, event_type, payload):
        """Send; never raises (nobody waits for a background task)."""
        try:
            getattr(self.notifier, priority)(
                nova_context.get_admin_context(), event_type,
                payload.obj_to_primitive())
        except Exception:
            LOG.exception('OPIE: could not send %s on host %s', event_type,
                          payload.host)


def _preemption(preemption, request_info, mode):
    """The fields of :class:`_PreemptionBase`."""
    request = dict(request_info)
    reason = request.pop('reason', 'request')
    return {'reason': reason, 'instance_uuid': preemption.instance_uuid,
            'host': preemption.host, 'nodename': preemption.nodename,
            'mode': mode,
            'request': PreemptionRequestPayload(**request)
            if reason == 'request' else None}


def _costs(preemption):
    """{uuid: cost} of the victims its explanation prices."""
    return {v['uuid']: v['cost'] for v in
            (preemption.explanation or {}).get('victims', ())}


def _victim(victim, terminated, owners, costs):
    owner = owners.get(victim.uuid, {})
    return PreemptionVictimPayload(
        uuid=victim.uuid, project_id=owner.get('project_id'),
        user_id=owner.get('user_id'), flavor=owner.get('flavor'),
        vcpus=victim.resources.vcpus, memory_mb=victim.resources.memory_mb,
        disk_gb=victim.resources.disk_gb, launched_at=victim.launched_at,
        terminated=terminated, cost=costs.get(victim.uuid))


def _explanation(record):
    """A :class:`PreemptionExplanationPayload` of an explanation
    (:mod:`opie.core.explain`), or None."""
    if record is None:
        return None
    return PreemptionExplanationPayload(
        why=record['why'], ranked_by=record['ranked_by'],
        ranking=record['ranking'], offset=record['offset'],
        victims_omitted=record['victims_omitted'],
        runners_up=[PreemptionRunnerUpPayload(**dict(
            {'weight': None}, **entry)) for entry in record['runners_up']],
        runners_up_omitted=record['runners_up_omitted'],
        refused=[PreemptionRefusalPayload(reason=reason, hosts=hosts)
                 for reason, hosts in record['refused'].items()])


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
    """The fields of a :class:`PreemptionRequestPayload`."""
    flavor = spec_obj.flavor
    return {'request_id': context.request_id,
            'project_id': spec_obj.project_id,
            'user_id': spec_obj.user_id,
            'flavor': flavor.name,
            'vcpus': flavor.vcpus,
            'memory_mb': flavor.memory_mb,
            'disk_gb': flavor.root_gb + flavor.ephemeral_gb,
            'num_instances': spec_obj.num_instances}
