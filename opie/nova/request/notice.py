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

"""Notice: a victim is told before it stops, and the server that displaced
it starts only once it has stopped.

A preemptible flavor may promise its servers notice (``opie:notice``
seconds, default ``[opie] preemption_notice``: :mod:`opie.core.flavor_spec`;
0, the default, keeps the immediate termination of :mod:`.terminate`).
Once a request has claimed every instance (its room is held in Placement
from then on) and some victim was promised notice, the scheduler, before
it answers the conductor, terminates at once the victims promised none,
gives notice to the others (:data:`~opie.core.contract.NOTICE_KEY`, the event
:data:`EVENT`, ``opie.preempt.start``), stops each cleanly at its time,
and holds the answer until each is off its host. The wait is here because
the conductor already waits for the scheduler's answer, so no Nova process
changes and no build starts beside a victim still running.

The steps, the edges and why: ``doc/source/design/index.rst``, "Notice".
"""
import dataclasses
import datetime
import time

from oslo_log import log as logging
from oslo_utils import timeutils

from nova.compute import task_states
from nova.compute import vm_states
import nova.conf
from nova import context as nova_context
from nova import exception
from nova import objects

from opie.core import contract
from opie.nova import conf as opie_conf
from opie.nova import flavor_check
from opie.nova import metrics
from opie.nova import notifications
from opie.nova.request import claim
from opie.nova.request import terminate

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
# The same time in the system metadata, which only Nova and OPIE write.
SYSTEM_KEY = 'opie_preempt_at'
# The event of the victim's opie-preempt action that records the notice.
EVENT = 'opie_notice'
# Seconds beyond the compute's [DEFAULT] shutdown_timeout that a stop may
# take: the RPC to the compute and the power-off's bookkeeping.
STOP_MARGIN = 60
# Seconds between two reads of the victims being stopped.
POLL = 1.0
# Off its host: nothing of it runs there.
OFF_VM_STATES = frozenset([vm_states.STOPPED, vm_states.SHELVED,
                           vm_states.SHELVED_OFFLOADED, vm_states.DELETED,
                           vm_states.SOFT_DELETED])
# Nova stops only these (``compute.api.API.stop``).
STOPPABLE_VM_STATES = frozenset([vm_states.ACTIVE, vm_states.ERROR])


def parse(value):
    """The time a :data:`~opie.core.contract.NOTICE_KEY` value names (naive
    UTC), or
    None if it names none (an owner may write any value of their own)."""
    try:
        return timeutils.normalize_time(timeutils.parse_isotime(value))
    except (ValueError, TypeError, OverflowError):
        # OverflowError: a time zone that moves year 1 or 9999 out of the
        # calendar.
        return None


def announced(compute_api, context, uuid, now):
    """Is instance ``uuid`` under a notice OPIE gave, or in the stop after
    it, at ``now``? The reconciler leaves such a victim to the process
    that gave it. Read from the system metadata (:data:`SYSTEM_KEY`), not
    the key its owner reads: its owner may write that one too, and keep a
    victim left running for as long as it rewrites it."""
    try:
        instance = compute_api.get(context, uuid,
                                   expected_attrs=['system_metadata'])
    except exception.InstanceNotFound:
        return False
    at = parse((instance.system_metadata or {}).get(SYSTEM_KEY))
    # From now back, not from ``at`` on: no time overflows the calendar.
    return at is not None and now - datetime.timedelta(
        seconds=CONF.shutdown_timeout + STOP_MARGIN) < at


# What became of a victim given notice: stopping (its clean shutdown
# asked), off its host (to terminate), leaving (terminated here, held for
# until it is gone), gone (nothing more to do), spared (notice withdrawn).
STOPPING, OFF, LEAVING, GONE, SPARED = (
    'stopping', 'off', 'leaving', 'gone', 'spared')


@dataclasses.dataclass
class _Victim:
    """One victim under notice."""
    preemption: object      # plan.Preemption it belongs to
    victim: object          # its core Instance
    at: datetime.datetime   # when its clean shutdown begins
    readable: datetime.datetime  # when its notice could first be read
    state: str = 'told'     # then one of the states below


class Notice:
    """The notice phase of the requests of one scheduler process."""

    def __init__(self, terminator, sleep=time.sleep):
        self.terminator = terminator
        self.sleep = sleep

    def preempt(self, preemptions, request_info):
        """Terminate the victims of ``preemptions``: at once (in the
        background) those promised no notice; the others once given
        notice and stopped, returning when they are off their hosts (see
        the module). ``request_info`` as :meth:`.terminate.Terminator.
        terminate` takes it."""
        if not any(v.notice for p in preemptions for v in p.victims):
            self.terminator.terminate_later(preemptions, request_info)
            return
        context = nova_context.get_admin_context()
        told, at_once = [], []
        for preemption in preemptions:
            owners = notifications.owners(preemption.victims)
            for victim in preemption.victims:
                given = victim.notice and self._tell(
                    context, preemption, victim, owners, request_info)
                if given:
                    told.append(given)
                else:
                    at_once.append((preemption, victim))
        if at_once:
            self.terminator.terminate_later(_by_preemption(at_once),
                                            request_info)
        if told:
            with metrics.NOTICE_HELD.time():
                for each in sorted(told, key=lambda v: v.at):
                    self._wait_until(each.at)
                    self._stop(context, each, request_info)
                self._hold(context, told, request_info)
        stopped = [(v.preemption, v.victim) for v in told
                   if v.state == OFF]
        if self.terminator.settings.termination_mode == opie_conf.SHELVE:
            # Its notice is over: unshelved later, it is under none.
            for _, victim in stopped:
                instance = self._read(context, victim.uuid)
                if instance is not None:
                    withdraw(instance)
        if stopped:
            self.terminator.terminate_later(_by_preemption(stopped),
                                            request_info)

    # 2. notice -----------------------------------------------------------
    def _tell(self, context, preemption, victim, owners, request_info):
        """Give ``victim`` its notice: a :class:`_Victim`, or None if it
        is promised none (or is no victim any more: the terminator
        judges it)."""
        instance, why = self._judged(context, preemption, victim.uuid)
        if instance is None or why is not None:
            return None
        seconds = flavor_check.terms(instance.flavor).notice
        if not seconds:
            return None
        notice = datetime.timedelta(seconds=seconds)
        announced = timeutils.utcnow() + notice
        stamp = contract.notice_stamp(announced)
        instance.metadata = dict(instance.metadata,
                                 **{contract.NOTICE_KEY: stamp})
        instance.system_metadata = dict(instance.system_metadata,
                                        **{SYSTEM_KEY: stamp})
        instance.save()
        # Never less than the notice from when its owner can read it: a
        # write slow under load moves the stop, not the time announced.
        readable = timeutils.utcnow()
        at = max(announced, readable + notice)
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            context, victim.uuid)
        terminate.record_event(
            mapping.cell_mapping, victim.uuid, preemption.host, EVENT,
            'notice of %d s: clean shutdown at %s' % (seconds, stamp))
        self.terminator.notifier.notice(
            preemption, victim, seconds, announced, owners, request_info,
            self.terminator.settings.termination_mode)
        LOG.info('OPIE: preempted instance %s on %s for %s is given %d s '
                 'of notice', victim.uuid, preemption.host,
                 preemption.instance_uuid, seconds)
        return _Victim(preemption, victim, at, readable)

    # 3. stop ---------------------------------------------------------------
    def _stop(self, context, each, request_info):
        """Stop ``each`` with a clean shutdown if it still is a victim;
        withdraw its notice if not; terminate it if Nova cannot stop it."""
        for _ in range(claim.WRITE_ATTEMPTS):
            instance, why = self._judged(context, each.preemption,
                                         each.victim.uuid)
            if instance is None:
                each.state = OFF
                return
            if why is not None:
                LOG.info('OPIE: instance %s, given notice on %s, is not '
                         'stopped: %s; notice withdrawn', instance.uuid,
                         each.preemption.host, why)
                withdraw(instance)
                each.state = SPARED
                return
            if _off(instance, each.preemption.host):
                each.state = OFF
                return
            if instance.task_state == task_states.POWERING_OFF:
                # Its owner is stopping it: as good.
                each.state = STOPPING
                return
            if (instance.vm_state not in STOPPABLE_VM_STATES
                    or instance.task_state is not None):
                break
            try:
                # Nova's stop is the compare-and-swap (from no task).
                self.terminator.compute_api.stop(context, instance,
                                                 clean_shutdown=True)
            except terminate.CHANGED_MEANWHILE:
                continue
            _given(each)
            each.state = STOPPING
            return
        LOG.info('OPIE: instance %s, given notice on %s, cannot be stopped '
                 'cleanly now; terminating it', each.victim.uuid,
                 each.preemption.host)
        _given(each)
        self._terminate(each, request_info)

    # 4. hold ---------------------------------------------------------------
    def _hold(self, context, told, request_info):
        """Return once every victim stopped or terminated here is off its
        host, or its compute has had its time (see the module)."""
        give_up = max(v.at for v in told) + datetime.timedelta(
            seconds=CONF.shutdown_timeout + STOP_MARGIN)
        while True:
            late = timeutils.utcnow() >= give_up
            for each in told:
                if each.state not in (STOPPING, LEAVING):
                    continue
                instance = self._read(context, each.victim.uuid)
                if instance is None or _off(instance, each.preemption.host):
                    each.state = OFF if each.state == STOPPING else GONE
                elif each.state == LEAVING and late:
                    LOG.error('OPIE: instance %s, preempted on %s, is still '
                              'there (%s, %s) after its compute\'s time; '
                              'the request goes on', instance.uuid,
                              each.preemption.host, instance.vm_state,
                              instance.task_state)
                    each.state = GONE
                elif each.state == STOPPING and (
                        late or instance.task_state is None):
                    # Running, and no stop under way: started again, or
                    # the stop failed; or its compute does not answer.
                    LOG.warning('OPIE: instance %s, given notice on %s, is '
                                'not stopping (%s, %s); terminating it',
                                instance.uuid, each.preemption.host,
                                instance.vm_state, instance.task_state)
                    self._terminate(each, request_info)
            if not any(v.state in (STOPPING, LEAVING) for v in told):
                return
            self.sleep(POLL)

    # helpers ---------------------------------------------------------------
    def _terminate(self, each, request_info):
        """Terminate ``each`` now, without a clean shutdown; it is held
        for until it is gone."""
        self.terminator.terminate(
            [dataclasses.replace(each.preemption, victims=(each.victim,))],
            request_info)
        each.state = LEAVING

    def _wait_until(self, when):
        left = (when - timeutils.utcnow()).total_seconds()
        if left > 0:
            self.sleep(left)

    def _read(self, context, uuid):
        return read(self.terminator.compute_api, context, uuid)

    def _judged(self, context, preemption, uuid):
        """The victim read now, and why it is no victim any more (None:
        it still is); (None, None) if it is gone."""
        instance = self._read(context, uuid)
        if instance is None:
            return None, None
        return instance, terminate.judged(context, instance, preemption)


def read(compute_api, context, uuid):
    """Instance ``uuid`` with what a notice needs of it, or None if it is
    gone."""
    try:
        return compute_api.get(
            context, uuid,
            expected_attrs=['flavor', 'metadata', 'system_metadata'])
    except exception.InstanceNotFound:
        return None


def _given(each):
    """Count the notice ``each`` got, now that it is acted on."""
    metrics.NOTICE_GIVEN.observe(
        (timeutils.utcnow() - each.readable).total_seconds())


def withdraw(instance):
    """Remove the notice from ``instance``'s metadata."""
    instance.metadata = {k: v for k, v in instance.metadata.items()
                         if k != contract.NOTICE_KEY}
    instance.system_metadata = {k: v for k, v in
                                instance.system_metadata.items()
                                if k != SYSTEM_KEY}
    instance.save()


def _off(instance, host):
    """Nothing of ``instance`` runs on ``host``."""
    return (instance.host != host
            or (instance.vm_state in OFF_VM_STATES
                and instance.task_state != task_states.POWERING_ON))


def _by_preemption(pairs):
    """(preemption, victim) pairs as preemptions of those victims."""
    found = {}
    for preemption, victim in pairs:
        found.setdefault(id(preemption), [preemption, []])[1].append(victim)
    return [dataclasses.replace(p, victims=tuple(victims))
            for p, victims in found.values()]
