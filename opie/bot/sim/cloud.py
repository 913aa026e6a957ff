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

"""Simulated servers: boot delay, hibernation, termination, billing.

Billing is per second of existence, rounded up per server, from the
create call (boot is billed, research note A10) to the delete call or the
preemption, minus the time spent hibernated.  A server hibernated while
booting finishes its boot once it resumes.  A preemptible server created
while its flavor is hibernated starts hibernated, as in the authors' HEM.

A preemption may come with a notice (:meth:`SimCloud.notify`): every live
preemptible server of the flavor hears when it will go (``NOTICE``, the
``opie:preempt_at`` metadata key of OPIE issue 26), and so does one that
resumes while a notice of its flavor is pending.
"""
import dataclasses
import math
import typing

from opie.bot.hads import interfaces
from opie.bot.job import model


@dataclasses.dataclass
class SimServer:
    id: str
    name: str
    flavor: model.Flavor
    preemptible: bool
    created: float
    boot_left: float
    boot_done: float = 0.0
    active: bool = False
    hibernated_since: typing.Optional[float] = None
    hibernated_s: float = 0.0
    ended: typing.Optional[float] = None
    boot_timer: typing.Any = None
    preempt_at: typing.Optional[float] = None

    @property
    def market(self):
        return model.PREEMPTIBLE if self.preemptible else model.NORMAL

    def billed_s(self, now):
        until = now if self.ended is None else self.ended
        frozen = self.hibernated_s
        if self.hibernated_since is not None:
            frozen += until - self.hibernated_since
        return math.ceil(until - self.created - frozen - 1e-9)

    def thaw(self, now):
        """Close the open hibernation."""
        self.hibernated_s += now - self.hibernated_since
        self.hibernated_since = None


class SimCloud(interfaces.Cloud):
    def __init__(self, clock, boot_s):
        self.clock = clock
        self.boot_s = boot_s
        self.servers = {}
        self.hibernated_flavors = set()
        self.notices = {}       # flavor name -> preemption times announced
        self._listeners = []
        self._hooks = []

    # -- the port ---------------------------------------------------------

    def create_server(self, name, flavor, preemptible):
        server = SimServer(id='srv-%04d' % (len(self.servers) + 1),
                           name=name, flavor=flavor, preemptible=preemptible,
                           created=self.clock.now(), boot_left=self.boot_s)
        self.servers[server.id] = server
        if preemptible and flavor.name in self.hibernated_flavors:
            server.hibernated_since = server.created
        else:
            self._boot(server)
        return server.id

    def delete_server(self, server_id):
        # Every end the simulation makes is reported as it happens.
        self._end(self.servers[server_id])
        return False

    def watch(self, callback):
        self._listeners.append(callback)

    # -- for the emulator and the runner ----------------------------------

    def add_hook(self, hook):
        """``hook`` learns of freezes, thaws and losses before the client."""
        self._hooks.append(hook)

    def live(self, flavor_name):
        return [s for s in self.servers.values()
                if s.ended is None and s.preemptible
                and s.flavor.name == flavor_name]

    def notify(self, flavor_name, at):
        """Announce that the flavor's servers go at ``at``; the hibernation
        or termination itself follows then.  Servers already warned
        keep the earlier time; hibernated ones hear on resuming."""
        self.notices.setdefault(flavor_name, []).append(at)
        hit = [s for s in self.live(flavor_name)
               if s.hibernated_since is None and s.preempt_at is None]
        for server in hit:
            self._warn(server, at)
        return len(hit)

    def _warn(self, server, at):
        server.preempt_at = at
        self._emit(interfaces.NOTICE, server, at)

    def _done_notice(self, flavor_name):
        """A preemption of the flavor came: its notice is spent."""
        pending = self.notices.get(flavor_name)
        if pending and min(pending) <= self.clock.now():
            pending.remove(min(pending))

    def hibernate(self, flavor_name):
        """Hibernate every live preemptible server of a flavor."""
        self._done_notice(flavor_name)
        self.hibernated_flavors.add(flavor_name)
        hit = [s for s in self.live(flavor_name)
               if s.hibernated_since is None]
        for server in hit:
            if server.ended is not None:
                continue    # deleted by the client on an earlier event
            server.hibernated_since = self.clock.now()
            server.preempt_at = None
            if server.boot_timer is not None:
                self.clock.cancel(server.boot_timer)
                server.boot_timer = None
                server.boot_left = server.boot_done - self.clock.now()
            self._tell('server_frozen', server.id)
            self._emit(interfaces.HIBERNATED, server)
        return len(hit)

    def resume(self, flavor_name):
        self.hibernated_flavors.discard(flavor_name)
        hit = [s for s in self.live(flavor_name)
               if s.hibernated_since is not None]
        for server in hit:
            if server.ended is not None:
                continue
            server.thaw(self.clock.now())
            if not server.active:
                self._boot(server)
            self._tell('server_thawed', server.id)
            self._emit(interfaces.RESUMED, server)
            pending = self.notices.get(flavor_name)
            if pending and server.ended is None:
                self._warn(server, min(pending))
        return len(hit)

    def terminate(self, flavor_name):
        """Preempt every live preemptible server of a flavor for good."""
        self._done_notice(flavor_name)
        hit = self.live(flavor_name)
        for server in hit:
            if server.ended is not None:
                continue
            self._end(server)
            self._tell('server_lost', server.id)
            self._emit(interfaces.TERMINATED, server)
        return len(hit)

    def bill(self):
        now = self.clock.now()
        return [{'server': s.id, 'name': s.name, 'flavor': s.flavor.name,
                 'market': s.market, 'price_h': s.flavor.price_h[s.market],
                 'billed_s': s.billed_s(now),
                 'cost': s.billed_s(now) * s.flavor.price_h[s.market]
                 / 3600.0}
                for s in self.servers.values()]

    # -- internals --------------------------------------------------------

    def _boot(self, server):
        server.boot_done = self.clock.now() + server.boot_left
        server.boot_timer = self.clock.call_at(server.boot_done,
                                               self._booted, server)

    def _booted(self, server):
        server.boot_timer = None
        server.boot_left = 0.0
        server.active = True
        self._emit(interfaces.ACTIVE, server)

    def _end(self, server):
        if server.boot_timer is not None:
            self.clock.cancel(server.boot_timer)
            server.boot_timer = None
        if server.hibernated_since is not None:
            server.thaw(self.clock.now())
        server.ended = self.clock.now()

    def _tell(self, method, server_id):
        for hook in self._hooks:
            getattr(hook, method)(server_id)

    def _emit(self, kind, server, at=None):
        event = interfaces.ServerEvent(kind, server.id, at)
        for listener in self._listeners:
            listener(event)
