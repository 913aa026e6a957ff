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
   Glance from the victim's compute, with the token of the context that
   asked for the shelve: only a context's ``auth_token`` travels over RPC,
   so the scheduler logs in as a service user (Nova's ``[service_user]``,
   else the ``[opie]`` auth options) and puts that user's token and catalog
   in the context, as an admin shelving another project's server does
   (Nova shares the snapshot with the victim's project, which can then
   unshelve it). Computes need ``[DEFAULT] shelved_offload_time = 0`` to
   free the room at once.

Then one notification ``opie.preempt`` per host goes to ``[opie]
notification_topics`` (:mod:`.notify`: a versioned payload naming each
victim's project), and the metrics count them (:mod:`.metrics`).

A victim that cannot be terminated is logged and skipped: its room is
already counted as free, and the reconciler terminates it later, as it does
victims whose scheduler died before terminating them.
"""
from oslo_log import log as logging

from keystoneauth1 import loading as ks_loading
from nova.compute import api as compute_api
from nova.compute import vm_states
import nova.conf
from nova import context as nova_context
from nova import exception
from nova import objects
from nova import thread_pool_factory

from opie.nova import conf as opie_conf
from opie.nova import metrics
from opie.nova import notify

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
ACTION = 'opie-preempt'
SHELVABLE_VM_STATES = frozenset([vm_states.ACTIVE, vm_states.STOPPED,
                                 vm_states.PAUSED, vm_states.SUSPENDED])


class Terminator:

    def __init__(self, settings, service_auth=None):
        self.settings = settings
        # (group, keystone auth plugin) of the service user, or None.
        self.service_auth = service_auth
        self.compute_api = compute_api.API()
        self.notifier = notify.Notifier()

    def terminate_later(self, preemptions, request_info):
        """:meth:`terminate` in the background; returns its future."""
        return thread_pool_factory.spawn(self.terminate, preemptions,
                                         request_info)

    def terminate(self, preemptions, request_info):
        """Terminate the victims of ``preemptions`` (plan.Preemption) and
        notify; ``request_info`` (a dict) describes what they made room
        for."""
        for preemption in preemptions:
            owners = notify.owners(preemption.victims)
            done = [victim for victim in preemption.victims
                    if self._terminate(victim.uuid, preemption)]
            mode = self.settings.termination_mode
            self.notifier.preempted(preemption, done, owners, request_info,
                                    mode)
            metrics.terminated(preemption, done, request_info, mode)

    def service_context(self):
        """A context that may act on any instance and, as the service
        user when one is configured, carries a token a compute can reach
        Glance with."""
        if self.service_auth is None:
            return nova_context.get_admin_context()
        group, auth = self.service_auth
        session = ks_loading.load_session_from_conf_options(CONF, group,
                                                            auth=auth)
        access = auth.get_access(session)
        return nova_context.RequestContext(
            user_id=access.user_id, project_id=access.project_id,
            roles=access.role_names, auth_token=access.auth_token,
            service_catalog=_v2_catalog(access.service_catalog.catalog),
            is_admin=True, overwrite=False)

    def check_login(self):
        """Log in as the service user now, or :class:`ConfigError`: with
        credentials Keystone refuses, every shelve would fail after its
        victim's room was given away."""
        try:
            self.service_context()
        except Exception as exc:
            raise opie_conf.ConfigError(
                'the service user of [%s] cannot log in: %s'
                % (self.service_auth[0], ' '.join(str(exc).split())[:200])) \
                from None

    def _shelve_context(self):
        """The service user's context, or None (logged) if Keystone
        refuses it now: the victim is then deleted, so its room frees."""
        try:
            return self.service_context()
        except Exception:
            LOG.exception('OPIE: the service user cannot log in; deleting '
                          'the victim instead of shelving it')
            return None

    def _terminate(self, uuid, preemption):
        try:
            mapping = objects.InstanceMapping.get_by_instance_uuid(
                nova_context.get_admin_context(), uuid)
            shelving = self.settings.termination_mode == opie_conf.SHELVE
            context = (self._shelve_context() if shelving else None) or \
                nova_context.get_admin_context()
            self._record_action(mapping.cell_mapping, uuid)
            instance = self.compute_api.get(context, uuid)
            if shelving and context.auth_token and _shelvable(instance):
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


def _v2_catalog(catalog):
    """A keystone v3 catalog in the v2 form a Nova context carries (as
    keystonemiddleware hands it to Nova's API): per service, one entry
    per region with a ``<interface>URL`` per endpoint."""
    services = []
    for service in catalog:
        regions = {}
        for endpoint in service.get('endpoints', []):
            region = endpoint.get('region') or endpoint.get('region_id')
            entry = regions.setdefault(region, {'region': region}
                                       if region else {})
            entry[endpoint['interface'].lower() + 'URL'] = endpoint['url']
        services.append(dict(
            {k: service[k] for k in ('type', 'name') if k in service},
            endpoints=list(regions.values())))
    return services


def _shelvable(instance):
    """Nova shelves only these; a victim its owner rescued, resized or
    is acting on is deleted instead."""
    return (instance.task_state is None
            and instance.vm_state in SHELVABLE_VM_STATES)
