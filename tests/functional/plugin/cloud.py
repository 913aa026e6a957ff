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

"""A small cloud for the plugin's decisions, in memory, without services.

As Nova and blazar-nova test their filters and weighers: hosts are Nova's
``FakeHostState`` (``nova.tests.unit.scheduler.fakes``), requests Nova's
``RequestSpec``, ``[opie]`` options set on Nova's CONF (the ``opie_options``
fixture of this directory's conftest). OPIE's
:class:`~opie.nova.request.plan.Plan` is made as the manager makes it, with an
instance loader that reads the cloud's lists instead of the cell databases; the
filter and weighers run through Nova's own handlers.
"""
import nova.conf
from nova import objects
from nova.scheduler import filters as nova_filters
from nova.scheduler import weights as nova_weights
from nova.tests.unit.scheduler import fakes
from oslo_utils.fixture import uuidsentinel

from opie.core import flavor_spec
from opie.core import resources as res
from opie.nova import conf as opie_conf
from opie.nova import filters
from opie.nova.request import host_records
from opie.nova.request import operations
from opie.nova.request import plan as plan_mod
from opie.nova.weights import overcommit
from opie.nova.weights import preemption_cost
from tests.unit.core import helpers

SIZES = {'small': helpers.SMALL, 'medium': helpers.MEDIUM,
         'large': helpers.LARGE}
# A host the size of the paper's (Table 2).
CAPACITY = helpers.PAPER_HOST


def spec(size, preemptible=False, rebuild=False):
    """A RequestSpec for a flavor of ``size`` (preemptible as ``opie-manage
    flavor create-preemptible`` makes it), as Nova hands it over."""
    vcpus, memory_mb, disk_gb = SIZES[size]
    extra_specs = flavor_spec.preemptible_specs(flavor_spec.Flavor(
        '', vcpus, memory_mb, disk_gb)) if preemptible else {}
    flavor = objects.Flavor(name=size, flavorid=size, vcpus=vcpus,
                            memory_mb=memory_mb, root_gb=disk_gb,
                            ephemeral_gb=0, swap=0, extra_specs=extra_specs)
    hints = {'_nova_check_type': ['rebuild']} if rebuild else {}
    return objects.RequestSpec(flavor=flavor, is_bfv=False,
                               scheduler_hints=hints,
                               instance_uuid=uuidsentinel.instance)


def victim(name, size='medium', minutes=0, eligible=True):
    """A preemptible instance that has run ``minutes``."""
    return helpers.inst(name, SIZES[size], minutes=minutes,
                        eligible=eligible)


class Cloud:
    """Hosts of :data:`CAPACITY`, each with its normal usage and its
    preemptible instances (core Instances, as the loader lists them)."""

    def __init__(self):
        self.normal = {}
        self.instances = {}
        self.no_token = set()
        # (hosts, fresh) of every load, in order.
        self.loads = []
        # The operations the plans asked Nova for.
        self.asked = []

    def host(self, name, normal=res.ZERO, preemptibles=(), token=True):
        self.normal[name] = normal
        self.instances[name] = list(preemptibles)
        if not token:
            self.no_token.add(name)
        return self

    def record(self, name):
        """The HostRecord a provider summary gives the manager."""
        return host_records.HostRecord(
            uuid=name, host=name, nodename=name, cell_uuid='cell1',
            capacity=CAPACITY, normal_used=self.normal[name],
            preemptible_used=res.total(i.resources
                                       for i in self.instances[name]),
            generation=1, token_inventory=name not in self.no_token)

    def host_states(self):
        """Nova's HostStates of the hosts: their compute node records
        count every instance (h_f)."""
        return [fakes.FakeHostState(name, name, self._compute_node(name))
                for name in self.normal]

    def _compute_node(self, name):
        used = self.normal[name] + res.total(i.resources
                                             for i in self.instances[name])
        vcpus, memory_mb, disk_gb = CAPACITY
        return dict(uuid=name, cell_uuid='cell1', vcpus_total=vcpus,
                    vcpus_used=used.vcpus, total_usable_ram_mb=memory_mb,
                    free_ram_mb=memory_mb - used.memory_mb,
                    total_usable_disk_gb=disk_gb,
                    disk_mb_used=used.disk_gb * 1024,
                    cpu_allocation_ratio=1.0, ram_allocation_ratio=1.0,
                    disk_allocation_ratio=1.0, aggregates=[])

    def __call__(self, records, fresh=False):
        """The plan's instance loader."""
        self.loads.append(([r.host for r in records], fresh))
        for record in records:
            record.preemptibles = list(self.instances[record.host])

    def plan(self, request_spec, operation=operations.BOOT):
        """The plan the manager opens for ``request_spec``, every host
        added; the operation asked of Nova is ``operation``."""
        plan = plan_mod.Plan(
            None, host_records.request_of(request_spec),
            opie_conf.load_settings(nova.conf.CONF), self,
            operation=lambda: self.asked.append(operation) or operation,
            now=helpers.NOW)
        for name in self.normal:
            plan.add(self.record(name))
        return plan


def passing(host_states, request_spec):
    """The names of the hosts OPIE's filter passes, run by Nova's filter
    handler as the scheduler runs it."""
    return [h.host for h in nova_filters.HostFilterHandler()
            .get_filtered_objects([filters.PreemptibleFilter()],
                                  host_states, request_spec)]


def ranking(host_states, request_spec):
    """The names of the hosts, best first, as OPIE's weighers rank them
    through Nova's weight handler."""
    return [w.obj.host for w in nova_weights.HostWeightHandler()
            .get_weighed_objects([overcommit.OvercommitWeigher(),
                                  preemption_cost.PreemptionCostWeigher()],
                                 host_states, request_spec)]
