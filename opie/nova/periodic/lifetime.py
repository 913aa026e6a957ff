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

"""Maximum lifetime: the leader ends preemptibles that outlived it.

A preemptible flavor may set a maximum lifetime (``opie:maximum_lifetime``
seconds, default ``[opie] maximum_lifetime``; 0, the default: none;
:mod:`opie.core.flavor_spec`). At each of its passes
(:meth:`.reconciler.Reconciler.run`), the reconciler's leader moves every
preemptible server older than that one step: told if its flavor promises
notice, stopped with a clean shutdown once that time has come, then
terminated as a victim is, with the reason ``lifetime``. Its age counts
from its creation or its last unshelve. It runs in the leader so that one
process acts on a server at a time, and every act is still a
compare-and-swap on the server; its state lives in Nova (:data:`TOLD`),
so the next leader continues what a dead one began.

The steps, the servers left alone, and why: ``doc/source/design/index.rst``,
"Modules in detail".
"""
import datetime
import json

from oslo_log import log as logging
from oslo_utils import timeutils

from nova.compute import instance_actions
from nova.compute import vm_states
from nova import context as nova_context
from nova import objects

from opie.core import contract
from opie.core import explain
from opie.core import preemptible
from opie.nova import conf as opie_conf
from opie.nova import flavor_check
from opie.nova import notifications
from opie.nova.request import claim
from opie.nova.request import host_records
from opie.nova.request import notice
from opie.nova.request import plan as plan_mod
from opie.nova.request import terminate

LOG = logging.getLogger(__name__)
# The reason of the notifications, metrics and explanations.
REASON = 'lifetime'
# The system metadata key that says, as only Nova and OPIE can write it,
# when the clean shutdown of a server told begins, in which of its lives
# it was told, and whether it was stopped since: {"at": ..., "life": its
# start[, "stopped": true]}.
TOLD = 'opie_lifetime_notice'
# The VM states a server is ended from; in the others it is leaving
# already, or not yet built.
ENDED_FROM = (vm_states.ACTIVE, vm_states.STOPPED, vm_states.PAUSED,
              vm_states.SUSPENDED, vm_states.RESCUED, vm_states.RESIZED,
              vm_states.ERROR)


def _naive(moment):
    return timeutils.normalize_time(moment)


class Lifetime:
    """The maximum lifetime's part of the lease holder's pass."""

    def __init__(self, terminator, placement_client):
        self.terminator = terminator
        self.placement_client = placement_client

    def run(self, context, cells, now, renew):
        """End, one step further, each preemptible of ``cells`` (uuid ->
        CellMapping) older than its maximum lifetime at ``now``; the
        preemptions made (those terminated). ``renew()`` is called before
        each act, and raises to stop the pass."""
        done = []
        for cell in cells.values():
            for uuid in self._outlived(context, cell, now):
                done += self._step(context, cell, uuid, now, renew)
        return done

    def _outlived(self, context, cell, now):
        """Uuids of the cell's preemptibles older than their lifetime by
        their creation alone (one query; each is judged in full after)."""
        with nova_context.target_cell(context, cell) as cctxt:
            found = objects.InstanceList.get_by_filters(
                cctxt, {'deleted': False, 'vm_state': list(ENDED_FROM)},
                expected_attrs=['flavor'])
        return [i.uuid for i in found
                if host_records.is_preemptible(i.flavor) and _over(
                    flavor_check.terms(i.flavor), _naive(i.created_at),
                    now)]

    # one step --------------------------------------------------------------
    def _step(self, context, cell, uuid, now, renew):
        # Before the read: another holder's act (if ever two overlap) is
        # then read, not overwritten (see the module).
        renew()
        instance = self._read(context, uuid)
        if instance is None:
            return []
        actions = _actions(context, cell, uuid)
        why = self.spared(context, instance, actions, now)
        if why is not None:
            LOG.debug('OPIE: instance %s is not ended for its lifetime now: '
                      '%s', uuid, why)
            return []
        terms = flavor_check.terms(instance.flavor)
        told = _told(instance, _started(instance, actions))
        if told is None:
            if terms.notice:
                self._tell(context, cell, instance, terms, actions, now)
                return []
        elif now < notice.parse(told['at']):
            # Its notice runs.
            return []
        elif (instance.vm_state in notice.STOPPABLE_VM_STATES
                and not told.get('stopped')):
            self._stop(context, instance, told)
            return []
        # No notice; or stopped (by this or by its owner); or Nova cannot
        # stop it; or it runs again after the stop.
        return self._end(context, cell, instance, terms, actions, now)

    def spared(self, context, instance, actions, now):
        """Why ``instance``, read just now with its instance ``actions``,
        is not to be ended for its lifetime at ``now``; None if it is."""
        if not host_records.is_preemptible(instance.flavor):
            return 'it is no longer preemptible'
        if (instance.vm_state not in ENDED_FROM
                or instance.task_state in preemptible.LEAVING_TASK_STATES):
            return 'it is already leaving'
        if instance.locked and instance.locked_by == preemptible.ADMIN_LOCK:
            return 'an operator locked it'
        if instance.task_state is not None:
            return 'it is busy (%s)' % instance.task_state
        terms = flavor_check.terms(instance.flavor)
        if not _over(terms, _started(instance, actions), now):
            return 'it is younger than its maximum lifetime'
        if not claim.held(self.placement_client, context, instance.uuid):
            return ('it holds nothing in Placement: its room is claimed '
                    'for another server, whose scheduler ends it')
        return None

    # acts ------------------------------------------------------------------
    def _tell(self, context, cell, instance, terms, actions, now):
        """Step 1. ``at`` from the clock as it writes, so a pass that took
        long gives no less notice."""
        at = max(now, timeutils.utcnow()) + datetime.timedelta(
            seconds=terms.notice)
        instance.metadata = dict(
            instance.metadata,
            **{contract.NOTICE_KEY: contract.notice_stamp(at)})
        instance.system_metadata = dict(instance.system_metadata, **{
            TOLD: json.dumps({
                'at': contract.notice_stamp(at),
                'life': contract.notice_stamp(_started(instance, actions))})})
        try:
            # Only as read: an act begun since (a stop, a move) is seen
            # by the next pass first.
            instance.save(expected_task_state=[None],
                          expected_vm_state=[instance.vm_state])
        except terminate.CHANGED_MEANWHILE:
            return
        preemption = self._preemption(instance, terms, actions)
        victim, = preemption.victims
        terminate.record_event(
            cell, instance.uuid, instance.host, notice.EVENT,
            '%s: notice of %d s: clean shutdown at %s' % (
                _why(terms), terms.notice, contract.notice_stamp(at)))
        self.terminator.notifier.notice(
            preemption, victim, terms.notice, at,
            notifications.owners([victim]),
            {'reason': REASON}, self.terminator.settings.termination_mode)
        LOG.info('OPIE: instance %s on %s reached its maximum lifetime '
                 '(%d s) and is given %d s of notice', instance.uuid,
                 instance.host, terms.lifetime(), terms.notice)

    def _stop(self, context, instance, told):
        """Step 2."""
        instance.system_metadata = dict(instance.system_metadata, **{
            TOLD: json.dumps(dict(told, stopped=True))})
        try:
            # Nova's stop is the compare-and-swap (from no task); it saves
            # the instance, the mark with it, or nothing.
            self.terminator.compute_api.stop(context, instance,
                                             clean_shutdown=True)
        except terminate.CHANGED_MEANWHILE:
            return
        except Exception:
            LOG.exception('OPIE: could not stop instance %s at the end of '
                          'its lifetime; the next pass tries again',
                          instance.uuid)
            return
        LOG.info('OPIE: instance %s on %s is stopped at the end of its '
                 'lifetime', instance.uuid, instance.host)

    def _end(self, context, cell, instance, terms, actions, now):
        """Step 3: the preemption made, if the terminator, reading it again
        right before its compare-and-swap, still ends it."""
        if (self.terminator.settings.termination_mode == opie_conf.SHELVE
                and contract.NOTICE_KEY in instance.metadata):
            # Its notice is over: unshelved later, it is under none.
            notice.withdraw(instance)
        return self.terminator.terminate(
            [self._preemption(instance, terms, actions)], {'reason': REASON},
            judge=lambda fresh: self.spared(
                context, fresh, _actions(context, cell, fresh.uuid), now))

    # helpers ---------------------------------------------------------------
    def _read(self, context, uuid):
        return notice.read(self.terminator.compute_api, context, uuid)

    @staticmethod
    def _preemption(instance, terms, actions):
        """The server's end as a preemption for no request. It was not
        chosen among others: no cost."""
        victim = host_records.core_instance(instance)
        why = '%s (counted from %s)' % (
            _why(terms), contract.notice_stamp(_started(instance, actions)))
        return plan_mod.Preemption(
            instance.host, instance.node, (victim,), 0.0,
            explanation=explain.repair(REASON, instance.host, why,
                                       [(victim, 0.0)], 0.0))


def _why(terms):
    return 'maximum lifetime of %d s reached' % terms.lifetime()


def _over(terms, started, now):
    """Has a server of ``terms`` that started at ``started`` outlived its
    maximum lifetime at ``now``?"""
    lifetime = terms.lifetime()
    return lifetime is not None and now >= started + datetime.timedelta(
        seconds=lifetime)


def _actions(context, cell, uuid):
    """The server's instance actions (``cell``: its CellMapping)."""
    with nova_context.target_cell(context, cell) as cctxt:
        return list(objects.InstanceActionList.get_by_instance_uuid(
            cctxt, uuid))


def _started(instance, actions):
    """When the server's current life began: its creation, or its last
    unshelve."""
    return max([_naive(instance.created_at)] + [
        _naive(a.start_time) for a in actions
        if a.action == instance_actions.UNSHELVE])


def _told(instance, started):
    """What :data:`TOLD` says if it was told in its current life, the one
    that began at ``started``; None if not."""
    try:
        told = json.loads(instance.system_metadata[TOLD])
    except (KeyError, TypeError, ValueError):
        return None
    if (not isinstance(told, dict)
            or told.get('life') != contract.notice_stamp(started)
            or notice.parse(told.get('at')) is None):
        return None
    return told
