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

Each is a versioned notification in Nova's wire format, its payload a
versioned object made with Nova's own classes
(:class:`nova.notifications.objects.base.NotificationPayloadBase`) in
namespace ``opie``: ``nova_object.name``, ``nova_object.namespace``,
``nova_object.version`` and ``nova_object.data``, as in Nova's
``instance.delete.end``. Samples: ``doc/notification_samples``.

``opie.preempt.start`` (INFO, payload ``PreemptionNoticePayload``)
    One per victim given notice (:mod:`.notice`), when the notice begins:
    the request, host and mode as below, the victim (``terminated``
    false), its ``notice`` in seconds and ``preempt_at``, when its clean
    shutdown begins. Victims without notice have none.
``opie.preempt.end`` (INFO, payload ``PreemptionPayload``)
    One per host and request once its victims have been terminated
    (:mod:`.terminate`): the request (null for the reconciler), host,
    mode, the victim set's cost and each victim with its owner and whether
    it was terminated.
``opie.preempt.error`` (ERROR, payload ``PreemptionErrorPayload``)
    One per victim OPIE could not terminate (the reconciler retries), sent
    before its preemption's ``end``: the same request, host and mode, the
    victim, and the ``fault`` (Nova's ``ExceptionPayload``: the exception,
    its message and traceback).

The event types follow Nova's ``<object>.<action>.<phase>``: the object
is OPIE, as it is the scheduler in Nova's ``scheduler.select_destinations``;
not ``instance``, whose notifications carry one instance's
``InstanceActionPayload``, which consumers of ``instance.*`` read. The
publisher is ``opie-scheduler:<[DEFAULT] host>``, as Nova's
``nova-scheduler:<host>``.

Where they go follows Nova's rule for its own (``[notifications]
notification_format``): with ``versioned`` (Nova's default) or ``both`` on
``[notifications] versioned_notifications_topics`` (default
``versioned_notifications``), beside Nova's; with ``unversioned`` or
``both`` on ``[opie] notification_topics`` too (default ``notifications``,
Nova's legacy topic), in the same versioned form, for an operator whose
consumers listen there. The driver and transport are those of
``[oslo_messaging_notifications]``.

Versioning, as Nova's: a field added to a payload raises its minor version,
one removed or changed in type or meaning its major version (the version
is in every notification, ``nova_object.version``). The field lists are
pinned to the versions by
``tests/functional/plugin/test_notification_objects.py``: a change without
a bump fails there. Their versions:

``PreemptionPayload``
    ``reason`` ("request": room made for a scheduling request;
    "room-taken": victims of a request that failed, whose room others took
    meanwhile; "claimed" or "reconcile": terminated by the reconciler;
    "lifetime": ended at its flavor's maximum lifetime, :mod:`.lifetime`),
    ``instance_uuid`` (the server the room was for; null from the
    reconciler), ``host``, ``nodename``, ``mode`` ("delete" or "shelve"),
    ``request`` (``PreemptionRequestPayload``, null unless ``reason`` is
    "request"), ``cost`` (the victim set's, as the scheduler ranked it:
    cost plugins price a set, not each instance), ``victims`` (a list of
    ``PreemptionVictimPayload``). 1.1 adds ``explanation``
    (``PreemptionExplanationPayload``, null where there is none).
``PreemptionErrorPayload``
    ``reason``, ``instance_uuid``, ``host``, ``nodename``, ``mode``,
    ``request`` as above, ``victim`` (``PreemptionVictimPayload``),
    ``fault`` (Nova's ``ExceptionPayload`` 1.1). 1.1: its victim is a
    ``PreemptionVictimPayload`` 1.1 (``cost``); as in Nova, a payload
    carrying another whose version rises rises too (so does
    ``PreemptionPayload``, for its victims).
``PreemptionNoticePayload`` (1.0)
    ``reason``, ``instance_uuid``, ``host``, ``nodename``, ``mode``,
    ``request`` as above, ``victim`` (``PreemptionVictimPayload``),
    ``notice`` (seconds), ``preempt_at``.
``PreemptionRequestPayload``
    ``request_id`` (as in the server's ``create`` instance action),
    ``project_id``, ``user_id``, ``flavor`` (name), ``vcpus``,
    ``memory_mb``, ``disk_gb``, ``num_instances``.
``PreemptionVictimPayload``
    ``uuid``, ``project_id``, ``user_id``, ``flavor`` (name), ``vcpus``,
    ``memory_mb``, ``disk_gb``, ``launched_at`` (null if it never
    launched), ``terminated`` (false if OPIE failed to). The owner fields
    are read just before it is terminated, and are null when Nova could
    not say (the victim was deleted meanwhile). 1.1 adds ``cost``, the
    victim's own as the cost plugins priced it when it was chosen (null
    when unknown, or beyond the explanation's
    :data:`opie.core.explain.MAX_VICTIMS`); the set's ``cost`` is their
    sum plus the plugins' ``offset``.
``PreemptionExplanationPayload`` (1.0)
    Why this host and these victims (:mod:`opie.core.explain`, where each
    field is described; the same explanation is kept in Nova's database
    with each victim's ``opie-preempt`` action): ``why`` (one sentence),
    ``ranked_by`` ("nova": in Nova's order and weights, "opie": in OPIE's;
    null from the reconciler), ``ranking``, ``offset``,
    ``victims_omitted``, ``runners_up`` (at most 3
    ``PreemptionRunnerUpPayload``: ``host``, ``fits``, ``tier``, ``cost``,
    ``victims`` (how many), ``weight`` (Nova's, null if unknown),
    ``why_lost``), ``runners_up_omitted``, ``refused`` (a list of
    ``PreemptionRefusalPayload``: ``reason``, ``hosts``).

The payloads stay out of Nova's registries, as Nova keeps its own
notification classes out of its object registry (which deserializes RPC
objects and puts each class on ``nova.objects``); nor are they in Nova's
list of notification classes, which Nova's tests pin to Nova's versions.
Serializing needs no registry. Nova's
envelope classes (``NotificationBase``, ``EventType``,
``NotificationPublisher``) are not used either: their event action and
publisher source are enums of Nova's own, which have no ``preempt`` and no
``opie-scheduler``, and they send through Nova's notifier, which waits for
the bus as long as ``[oslo_messaging_notifications] retry`` says (forever
by default).

A notification never holds up a termination: every victim of a call is
terminated before its notifications are sent, and each send gives up
after :data:`RETRY` attempts to reach the message bus. A notification that
could not be sent is logged; the metrics still count the preemption.
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
