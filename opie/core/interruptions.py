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

"""Interruption rates: how often OPIE preempts a flavor's servers.

What Azure's eviction rates and AWS's interruption frequencies tell a
tenant choosing a flavor, per preemptible flavor: its preemptions per
server-day over the last day and over the last week. A preemption is one
OPIE termination of one of the flavor's servers (the ``opie-preempt``
instance action recorded on the victim), in the window; a server-day is a
day of one of the flavor's servers existing (from its creation to its
deletion, as Nova's rows tell them), in the window. A flavor whose servers
did not exist at all in a window has no rate for it (``unknown``), not a
rate of 0.

Nova-free: the scheduler's reconciler reads the rows and publishes the
rates as the flavor's extra specs (:mod:`opie.nova.periodic.interruptions`),
which every tenant can read (``openstack flavor show FLAVOR -c properties``);
``opie-bot plan`` reads them back (:func:`.contract.published`: the
specs' names and formats are the tenant's contract). The operator tunes
how often they are recomputed with ``[opie]
interruption_rates_interval``. None of these extra specs is part of the
flavor contract (:mod:`.flavor_spec` ignores them).
"""
import dataclasses
import datetime

from opie.core import contract

_DAY = datetime.timedelta(days=1).total_seconds()


@dataclasses.dataclass(frozen=True)
class Life:
    """One server: its flavor, when it was created and deleted (None:
    still there), as naive UTC times."""
    uuid: str
    flavor: object
    created_at: datetime.datetime
    deleted_at: datetime.datetime = None


def _lived(life, start, end):
    """Seconds of ``life`` within [start, end)."""
    born = max(life.created_at, start)
    died = min(life.deleted_at or end, end)
    return max(0.0, (died - born).total_seconds())


def server_days(lives, now, flavors=()):
    """{flavor: {window: server-days}} of ``lives`` (and of ``flavors``,
    with none) in each window ending ``now``."""
    days = {flavor: dict.fromkeys(contract.WINDOWS, 0.0)
            for flavor in flavors}
    for life in lives:
        per_window = days.setdefault(life.flavor,
                                     dict.fromkeys(contract.WINDOWS, 0.0))
        for window, length in contract.WINDOWS.items():
            per_window[window] += _lived(life, now - length, now) / _DAY
    return days


def rates(lives, preempted, now, flavors=()):
    """{flavor: {window: preemptions per server-day, or None}}.
    ``preempted``: (uuid of a life, time) of each preemption."""
    days = server_days(lives, now, flavors)
    flavor_of = {life.uuid: life.flavor for life in lives}
    counts = {flavor: dict.fromkeys(contract.WINDOWS, 0) for flavor in days}
    for uuid, when in preempted:
        if uuid not in flavor_of:
            continue
        for window, length in contract.WINDOWS.items():
            if now - length <= when <= now:
                counts[flavor_of[uuid]][window] += 1
    return {flavor: {window: (counts[flavor][window] / spent if spent
                              else None)
                     for window, spent in per_window.items()}
            for flavor, per_window in days.items()}


def _shown(rate):
    return contract.UNKNOWN if rate is None else format(rate, '.3g')


def specs(flavor_rates, now):
    """The extra specs that publish one flavor's rates, computed at
    ``now``."""
    found = {contract.RATE_SPEC % window: _shown(flavor_rates[window])
             for window in contract.WINDOWS}
    found[contract.UPDATED_SPEC] = now.strftime(contract.RATE_TIME_FORMAT)
    return found


def to_write(published, computed):
    """Of ``computed`` (:func:`specs`), what to write over a flavor's
    ``published`` extra specs: nothing when no rate changed, else the
    rates changed and the time."""
    changed = {key: value for key, value in computed.items()
               if key != contract.UPDATED_SPEC
               and published.get(key) != value}
    if changed:
        changed[contract.UPDATED_SPEC] = computed[contract.UPDATED_SPEC]
    return changed
