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

"""Terminate claimed victims, and tell their owners and the operator.

Runs for victims already claimed in Placement (:mod:`.claim`): their room
is free for every scheduler worker from the claim on, so the scheduler
answers the request first and terminates in the background
(:meth:`Terminator.terminate_later`); the reconciler terminates in its own
periodic task. Each victim is read again right before acting and spared
unless it is still a victim (:func:`spared`); its termination begins with
a compare-and-swap on its task and VM state, so no victim is acted on
twice. It gets an ``opie-preempt`` instance action with the explanation,
then is deleted or shelved (``[opie] termination_mode``), and the
notifications and metrics count it (:mod:`opie.nova.notifications`,
:mod:`opie.nova.metrics`). A victim that cannot be terminated is logged
and left to the reconciler.

The steps, the service user of a shelve, and why:
``doc/source/design/index.rst``, "Modules in detail".
"""
import dataclasses

from oslo_log import log as logging
from oslo_utils import timeutils

from keystoneauth1 import loading as ks_loading
from nova.compute import api as compute_api
from nova.compute import task_states
from nova.compute import vm_states
import nova.conf
from nova import context as nova_context
from nova import exception
from nova import objects
from nova.scheduler.client import report
from nova import thread_pool_factory

from opie.core import explain
from opie.core import preemptible
from opie.nova import conf as opie_conf
from opie.nova import metrics
from opie.nova import notifications
from opie.nova.request import claim
from opie.nova.request import history
from opie.nova.request import host_records

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
# The victim's instance action, and its event that holds the explanation.
ACTION, EVENT = history.ACTION, history.EVENT
SHELVABLE_VM_STATES = frozenset([vm_states.ACTIVE, vm_states.STOPPED,
                                 vm_states.PAUSED, vm_states.SUSPENDED])


class _ShelveFailed(Exception):
    """Nova could not shelve a victim: it is deleted instead."""


# What became of a victim, when it was not the exception it could not be
# terminated for.
TERMINATED, SPARED = 'terminated', 'spared'
# The reason the reconciler gives for victims it found left running.
LEFT = 'claimed'
# Another actor (its owner, another OPIE process) got to the victim between
# its read and the compare-and-swap that begins its termination.
CHANGED_MEANWHILE = (exception.InstanceNotFound,
                     exception.InstanceUpdateConflict,
                     exception.InstanceInvalidState)


class Terminator:

    def __init__(self, settings, service_auth=None):
        self.settings = settings
        # (group, keystone auth plugin) of the service user, or None.
        self.service_auth = service_auth
        self.compute_api = compute_api.API()
        self.notifier = notifications.Notifier()

    def terminate_later(self, preemptions, request_info):
        """:meth:`terminate` in the background; returns its future."""
        return thread_pool_factory.spawn(self.terminate, preemptions,
                                         request_info)

    def terminate(self, preemptions, request_info, judge=None):
        """Terminate the victims of ``preemptions`` (plan.Preemption) that
        still are victims, and notify; ``request_info`` (a dict) describes
        what they made room for. ``judge(instance)``, if given, says why a
        victim read again is spared (None: it is not) instead of
        :func:`spared`, for terminations that free no room for anyone
        (:mod:`~opie.nova.periodic.lifetime`). Returns the preemptions as they
        happened:
        each with the victims terminated, none where none was."""
        told = []
        for preemption in preemptions:
            owners = notifications.owners(preemption.victims)
            details = explained(preemption, owners, request_info)
            outcomes = {victim: self._terminate(
                victim.uuid, preemption, request_info.get('reason') == LEFT,
                details, judge)
                for victim in preemption.victims}
            # A victim spared was no victim after all: it is not told of.
            preemption = dataclasses.replace(preemption, victims=tuple(
                v for v in preemption.victims if outcomes[v] != SPARED))
            if preemption.victims:
                told.append((preemption, owners, {
                    v: outcomes[v] for v in preemption.victims}))
        # Only now: a message bus that is down holds up no termination.
        mode = self.settings.termination_mode
        happened = []
        for preemption, owners, outcomes in told:
            done = [v for v in preemption.victims
                    if outcomes[v] == TERMINATED]
            metrics.terminated(preemption, done, request_info, mode)
            for victim in preemption.victims:
                if outcomes[victim] != TERMINATED:
                    self.notifier.failed(preemption, victim,
                                         outcomes[victim], owners,
                                         request_info, mode)
            self.notifier.preempted(preemption, done, owners, request_info,
                                    mode)
            if done:
                happened.append(dataclasses.replace(preemption,
                                                    victims=tuple(done)))
        return happened

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

    def _terminate(self, uuid, preemption, left=False, details=None,
                   judge=None):
        """Terminate one victim if it still is one: :data:`TERMINATED`,
        :data:`SPARED`, or the exception it failed for (the last change
        met, if it kept changing). Read, judge, act; an act refused
        because the victim changed since the read (its owner confirmed a
        resize, say) reads and judges again. ``left``: the reconciler found
        it left running, holding nothing, for the grace period: a delete
        begun on it then was never done. ``details``: the explanation kept
        with its instance action (:func:`explained`). ``judge``: as
        :meth:`terminate` takes it."""
        # One found left running may be back from a shelve that failed on
        # its compute: it is deleted, or it would be shelved every pass.
        shelving = (self.settings.termination_mode == opie_conf.SHELVE
                    and not left)
        context = (self._shelve_context() if shelving else None) or \
            nova_context.get_admin_context()
        for _ in range(claim.WRITE_ATTEMPTS):
            try:
                why = self._judge_and_act(context, uuid, preemption,
                                          shelving, left, details, judge)
            except exception.InstanceNotFound:
                why = 'it is gone'
            except CHANGED_MEANWHILE as exc:
                changed = exc
                continue
            except _ShelveFailed as exc:
                # Read it again (the failed shelve changed it) and delete.
                changed = exc.__cause__
                shelving = False
                continue
            except Exception as exc:
                LOG.exception('OPIE: could not %s preempted instance %s',
                              self.settings.termination_mode, uuid)
                return exc
            if why is not None:
                LOG.info('OPIE: instance %s on %s, taken as a victim, is '
                         'not terminated: %s', uuid, preemption.host, why)
                return SPARED
            LOG.info('OPIE: preempted instance %s (%s) on %s for %s', uuid,
                     self.settings.termination_mode, preemption.host,
                     preemption.instance_uuid or 'the reconciler')
            return TERMINATED
        LOG.error('OPIE: preempted instance %s kept changing under %d '
                  'attempts to terminate it; the reconciler tries again',
                  uuid, claim.WRITE_ATTEMPTS)
        return changed

    def _judge_and_act(self, context, uuid, preemption, shelving, left,
                       details, judge):
        """Why the victim is spared, or None once it is terminated."""
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            nova_context.get_admin_context(), uuid)
        # Right before acting: what the database and Placement say now.
        instance = self.compute_api.get(context, uuid,
                                        expected_attrs=['flavor'])
        why = (judge(instance) if judge is not None
               else judged(context, instance, preemption, left))
        if why is None:
            self._act(context, mapping.cell_mapping, instance, shelving,
                      details)
        return why

    def _act(self, context, cell_mapping, instance, shelving, details):
        """Shelve or delete ``instance``, then record the action (with
        ``details``, its explanation); each way
        begins with a compare-and-swap on its task and VM state as just
        read, so its owner or another OPIE process acting on it since
        makes this one read it again."""
        if shelving and context.auth_token and _shelvable(instance):
            # Nova's shelve is the compare-and-swap (from no task). No
            # clean shutdown: the room is already another server's, which
            # must not start beside a guest still shutting down.
            try:
                self.compute_api.shelve(context, instance,
                                        clean_shutdown=False)
            except CHANGED_MEANWHILE:
                raise
            except Exception as exc:
                LOG.exception('OPIE: could not shelve preempted instance '
                              '%s; deleting it: its room is another '
                              'server\'s', instance.uuid)
                raise _ShelveFailed() from exc
            self._record_action(cell_mapping, instance.uuid, instance.host,
                                details)
            self._tag(cell_mapping, instance.uuid)
            return
        task_state = instance.task_state
        claimed = instance.obj_clone()
        claimed.task_state = task_states.DELETING
        claimed.save(expected_task_state=[task_state],
                     expected_vm_state=[instance.vm_state])
        if task_state == task_states.DELETING:
            # A delete begun and never done (its process died): Nova's
            # would take it for one under way and do nothing.
            instance.task_state = None
        try:
            # ``instance`` still has the task state it was read with, so
            # Nova's delete does not take it for a delete under way.
            self.compute_api.delete(context, instance)
        except Exception:
            # As found (Nova's delete may have changed ``instance``): the
            # next attempt, or reconcile pass, reads it again.
            claimed.task_state = task_state
            claimed.save(expected_task_state=[task_states.DELETING])
            raise
        self._record_action(cell_mapping, instance.uuid, instance.host,
                            details)

    @staticmethod
    def _record_action(cell_mapping, uuid, host, details):
        """Keep the explanation ``details`` as event :data:`EVENT` of the
        victim's action (:func:`record_event`)."""
        record_event(cell_mapping, uuid, host, EVENT, details)

    def _tag(self, cell_mapping, uuid):
        admin = nova_context.get_admin_context()
        with nova_context.target_cell(admin, cell_mapping) as cctxt:
            try:
                objects.Tag(cctxt, resource_id=uuid,
                            tag=self.settings.preempted_tag).create()
            except exception.TooManyTags:
                LOG.warning('OPIE: preempted instance %s has too many tags '
                            'to add %s', uuid, self.settings.preempted_tag)


def record_event(cell_mapping, uuid, host, event, details):
    """Record the victim's ``opie-preempt`` action, and on it an ``event``
    (:data:`EVENT`, or the notice's) whose ``details`` (Nova's API shows
    them to admins only) say what happened: once. A victim with the
    action already (a shelve that failed after it, a termination retried,
    its notice given) keeps it, and each event it holds: the decision as
    first made; one whose action lacks the event (its writer died in
    between) is given it."""
    admin = nova_context.get_admin_context()
    with nova_context.target_cell(admin, cell_mapping) as cctxt:
        action = next((a for a in
                       objects.InstanceActionList.get_by_instance_uuid(
                           cctxt, uuid) if a.action == ACTION), None)
        if action is None:
            # Its own context: an action is found again by request id.
            action = objects.InstanceAction.action_start(cctxt, uuid,
                                                         ACTION)
            objects.InstanceAction.action_finish(cctxt, uuid,
                                                 want_result=False)
        elif details is None or any(
                found.event == event for found in
                objects.InstanceActionEventList.get_by_action(
                    cctxt, action.id)):
            return
        if details is None:
            return
        now = timeutils.utcnow()
        try:
            objects.InstanceActionEvent(
                cctxt, event=event, start_time=now, finish_time=now,
                result='Success', host=host, details=details).create(
                    uuid, action.request_id)
        except Exception:
            # The victim is preempted all the same: only this record is
            # lost, and this log line keeps it.
            LOG.exception('OPIE: could not record %s of preempted '
                          'instance %s: %s', event, uuid, details)


def explained(preemption, owners, request_info):
    """The explanation of ``preemption`` kept with each of its victims:
    the scheduler's (:mod:`opie.core.explain`) with the request
    (``request_info``, from :func:`~opie.nova.notifications.request_info`, or
    ``{'reason': ...}`` for none) and the victims' ``owners``
    (:func:`~opie.nova.notifications.owners`), as JSON; None without one."""
    if preemption.explanation is None:
        return None
    request = None if 'reason' in request_info else request_info
    return explain.dumps(explain.completed(
        preemption.explanation, preemption.instance_uuid, request, owners))


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


def judged(context, instance, preemption, left=False):
    """:func:`spared` of ``instance``, read again just now, with what
    Placement holds for it and its host now."""
    placement = report.report_client_singleton()
    return spared(instance, claim.held(placement, context, instance.uuid),
                  preemption, lambda: host_records.over_capacity(
                      placement, context, preemption.provider_uuid), left)


def spared(instance, held, preemption, over_capacity, left=False):
    """Why ``instance``, taken as a victim for ``preemption`` and read
    again just now, must not be terminated; None if it must. ``held``: its
    allocations in Placement now; ``over_capacity()``: whether the host it
    was taken on is over capacity now (asked only where it matters);
    ``left``: found left running by the reconciler (a delete begun on it
    then is one never done, not one under way).

    A victim is terminated only while it is preemptible and its room is
    needed. A victim emptied holds nothing, so it stands in the way of the
    server its room went to. One holding its room again where it was taken
    stands in the way only if that host is over capacity with it (healed
    back by ``heal_allocations``), not where the room was free to give back
    (:mod:`.give_back`). One that has moved to another host, or holds
    nothing in the middle of a move, is between two claims of its own.
    One that still runs where it was taken, idle, holding room only on
    another host, holds a stale allocation (a resize reverted after it was
    taken): it is terminated, which frees that too. An operator's lock
    protects a preemptible from being chosen; one set after its room was
    given does not take the room back.
    """
    if not host_records.is_preemptible(instance.flavor):
        return 'it is no longer preemptible (a resize reverted or confirmed)'
    if instance.vm_state in preemptible.LEAVING_VM_STATES or (
            instance.task_state in preemptible.LEAVING_TASK_STATES
            and not left):
        return 'it is already leaving its host'
    moving = instance.task_state in preemptible.MOVING_TASK_STATES
    if held and preemption.provider_uuid not in held and (
            moving or instance.host != preemption.host):
        return 'it has moved to another host'
    if held and preemption.provider_uuid in held and not over_capacity():
        return 'it holds its room again, and its host has room for it'
    if not held and moving:
        return 'it is in the middle of a move (%s)' % instance.task_state
    return None


def _shelvable(instance):
    """Nova shelves only these; a victim its owner rescued, resized or
    is acting on is deleted instead."""
    return (instance.task_state is None
            and instance.vm_state in SHELVABLE_VM_STATES)
