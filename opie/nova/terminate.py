"""Terminate claimed victims, and tell their owners and the operator.

Runs for victims already claimed in Placement (:mod:`.claim`): their room
is free for every scheduler worker from the claim on, so the scheduler
answers the request first and terminates in the background
(:meth:`Terminator.terminate_later`, on Nova's default executor: green
threads under eventlet, ``[DEFAULT] default_thread_pool_size`` native
threads otherwise; a stopping scheduler waits for them). The reconciler
terminates in its own periodic task. For every victim:

1. an instance action ``opie-preempt`` is recorded in the victim's cell
   with an admin context: its owner lists it, even after the server is
   deleted, from API microversion 2.21 (it names no other tenant);
2. the victim is deleted (``[opie] termination_mode = delete``) or shelved
   without a clean shutdown (``shelve``; tagged ``[opie] preempted_tag`` so
   its owner can find and unshelve it; a victim Nova cannot shelve, being
   rescued, resized or acted on by its owner, is deleted). The admin
   context acts on victims their owner locked. Shelving snapshots to
   Glance, so the scheduler acts as the keystone service user of the
   ``[opie]`` auth options; computes need ``[DEFAULT]
   shelved_offload_time = 0`` to free the room at once.

Then one oslo.messaging notification ``opie.preempt`` per host goes to
``[opie] notification_topics``: host, victims, cost and the request.

A victim that cannot be terminated is logged and skipped: its room is
already counted as free, and the reconciler terminates it later, as it does
victims whose scheduler died before terminating them.
"""
from oslo_log import log as logging
import oslo_messaging as messaging

from keystoneauth1 import loading as ks_loading
from nova.compute import api as compute_api
from nova.compute import vm_states
import nova.conf
from nova import context as nova_context
from nova import exception
from nova import objects
from nova import rpc
from nova import thread_pool_factory

from opie.nova import conf as opie_conf

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
ACTION = 'opie-preempt'
SHELVABLE_VM_STATES = frozenset([vm_states.ACTIVE, vm_states.STOPPED,
                                 vm_states.PAUSED, vm_states.SUSPENDED])
EVENT_TYPE = 'opie.preempt'


class Terminator:

    def __init__(self, settings, auth=None):
        self.settings = settings
        self.auth = auth
        self.compute_api = compute_api.API()
        self._notifier = None

    def terminate_later(self, preemptions, request_info):
        """:meth:`terminate` in the background; returns its future."""
        return thread_pool_factory.spawn(self.terminate, preemptions,
                                         request_info)

    def terminate(self, preemptions, request_info):
        """Terminate the victims of ``preemptions`` (plan.Preemption) and
        notify; ``request_info`` (a dict) describes what they made room
        for."""
        for preemption in preemptions:
            done = [victim for victim in preemption.victims
                    if self._terminate(victim.uuid, preemption)]
            try:
                self._notify(preemption, done, request_info)
            except Exception:
                # Nobody waits for a background task: say it here.
                LOG.exception('OPIE: could not notify the preemption on '
                              'host %s', preemption.host)

    def _context(self):
        """A context that may act on any instance (and reach Glance as the
        service user, when configured)."""
        if self.auth is None:
            return nova_context.get_admin_context()
        session = ks_loading.load_session_from_conf_options(
            CONF, opie_conf.GROUP_NAME, auth=self.auth)
        return nova_context.RequestContext(
            user_id=self.auth.get_user_id(session),
            project_id=self.auth.get_project_id(session),
            roles=self.auth.get_access(session).role_names,
            is_admin=True, user_auth_plugin=self.auth, overwrite=False)

    def _terminate(self, uuid, preemption):
        try:
            mapping = objects.InstanceMapping.get_by_instance_uuid(
                nova_context.get_admin_context(), uuid)
            self._record_action(mapping.cell_mapping, uuid)
            context = self._context()
            instance = self.compute_api.get(context, uuid)
            if (self.settings.termination_mode == opie_conf.SHELVE
                    and _shelvable(instance)):
                # No clean shutdown: the room is already another server's,
                # which must not start beside a guest still shutting down.
                self.compute_api.shelve(context, instance,
                                        clean_shutdown=False)
                self._tag(mapping.cell_mapping, uuid)
            else:
                self.compute_api.delete(context, instance)
        except Exception:
            LOG.exception('OPIE: could not %s preempted instance %s',
                          self.settings.termination_mode, uuid)
            return False
        LOG.info('OPIE: preempted instance %s (%s) on %s for %s', uuid,
                 self.settings.termination_mode, preemption.host,
                 preemption.instance_uuid or 'the reconciler')
        return True

    @staticmethod
    def _record_action(cell_mapping, uuid):
        # Its own context: an action is found again by request id.
        admin = nova_context.get_admin_context()
        with nova_context.target_cell(admin, cell_mapping) as cctxt:
            objects.InstanceAction.action_start(cctxt, uuid, ACTION,
                                                want_result=False)
            objects.InstanceAction.action_finish(cctxt, uuid,
                                                 want_result=False)

    def _tag(self, cell_mapping, uuid):
        admin = nova_context.get_admin_context()
        with nova_context.target_cell(admin, cell_mapping) as cctxt:
            try:
                objects.Tag(cctxt, resource_id=uuid,
                            tag=self.settings.preempted_tag).create()
            except exception.TooManyTags:
                LOG.warning('OPIE: preempted instance %s has too many tags '
                            'to add %s', uuid, self.settings.preempted_tag)

    @property
    def notifier(self):
        if self._notifier is None:
            self._notifier = messaging.Notifier(
                rpc.NOTIFICATION_TRANSPORT,
                publisher_id='opie-scheduler.%s' % CONF.host,
                topics=CONF.opie.notification_topics,
                serializer=rpc.RequestContextSerializer(
                    rpc.JsonPayloadSerializer()))
        return self._notifier

    def _notify(self, preemption, done, request_info):
        payload = {
            'host': preemption.host,
            'nodename': preemption.nodename,
            'mode': self.settings.termination_mode,
            'cost': preemption.cost,
            'victims': [_describe(v, v in done)
                        for v in preemption.victims],
            'request': dict(request_info,
                            instance_uuid=preemption.instance_uuid),
        }
        self.notifier.info(nova_context.get_admin_context(), EVENT_TYPE,
                           payload)


def _shelvable(instance):
    """Nova shelves only these; a victim its owner rescued, resized or
    is acting on is deleted instead."""
    return (instance.task_state is None
            and instance.vm_state in SHELVABLE_VM_STATES)


def _describe(victim, terminated):
    launched = victim.launched_at
    return {'uuid': victim.uuid,
            'vcpus': victim.resources.vcpus,
            'memory_mb': victim.resources.memory_mb,
            'disk_gb': victim.resources.disk_gb,
            'launched_at': launched and launched.isoformat(),
            'terminated': terminated}


def request_info(spec_obj):
    """What the notification says about a scheduling request."""
    flavor = spec_obj.flavor
    return {'project_id': spec_obj.project_id,
            'user_id': spec_obj.user_id,
            'flavor': flavor.name,
            'vcpus': flavor.vcpus,
            'memory_mb': flavor.memory_mb,
            'disk_gb': flavor.root_gb + flavor.ephemeral_gb,
            'num_instances': spec_obj.num_instances}
