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

"""Scheduling latency of OPIE against stock Nova, measured in one run.

Part 1 runs an in-process Nova 34 + Placement cloud (casts stay casts) and
times ``select_destinations`` called on the scheduler managers, as the
paper's Fig. 2 does:

* stock Nova placing a normal server on an empty cloud (the baseline);
* OPIE placing a normal, then a preemptible server on an empty cloud;
* OPIE placing a normal server on a cloud full of preemptibles, which
  preempts one each time: the victim is claimed in the same Placement
  write as the server, and terminated in the background after the answer,
  as in production (the benchmark waits for it between two calls,
  untimed);
* the retry baseline on that saturated cloud, what a scheduler without
  single-pass preemption does: stock scheduling (Nova's manager with
  OPIE's filter in safe mode, which keeps it from overcommitting h_f)
  fails with NoValidHost; the victims OPIE would choose are chosen (OPIE's
  core on every host read from Placement, preemptibles loaded as OPIE
  loads them) and deleted through the compute API; it waits until
  Placement no longer holds their allocations (polling every 5 ms: a
  second pass cannot succeed before), and stock scheduling runs again and
  succeeds. All of it is timed.

Part 2 runs Nova's real filter and weigher handlers over 1000 synthetic
host states, stock against OPIE (filter, weighers and the per-request
plan, victims chosen among four preemptibles per host).

Goals (issue 3): OPIE/stock <= 1.15 without termination, <= 1.5 with;
OPIE at least twice as fast as the retry baseline. Run from the repository
root: ``python benchmarks/scheduler.py [--iterations N] [--hosts N]``.
"""
import nova.tests.functional  # noqa: F401 (monkey patching comes first)

import argparse  # noqa: E402
import copy  # noqa: E402
import datetime  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import oslo_messaging as messaging  # noqa: E402
from oslo_utils import timeutils  # noqa: E402
from oslo_utils import uuidutils  # noqa: E402

from nova.compute import api as compute_api  # noqa: E402
from nova import context as nova_context  # noqa: E402
from nova import exception  # noqa: E402
from nova import objects  # noqa: E402
from nova.scheduler import filters  # noqa: E402
from nova.scheduler import manager as nova_manager  # noqa: E402
from nova.scheduler import weights  # noqa: E402

from opie.core import host as core_host  # noqa: E402
from opie.core import resources as res  # noqa: E402
from opie.core import scheduling  # noqa: E402
from opie.nova.request import host_records  # noqa: E402
from opie.nova.request import operations  # noqa: E402
from opie.nova.request import plan as plan_mod  # noqa: E402
from opie.testing import cloud  # noqa: E402
from opie.testing import harness  # noqa: E402

NOVA_WEIGHERS = ['nova.scheduler.weights.all_weighers']
OPIE_WEIGHERS = ['opie.nova.weights.overcommit.OvercommitWeigher',
                 'opie.nova.weights.preemption_cost.PreemptionCostWeigher']
ARGS = argparse.Namespace(iterations=20, hosts=8, synthetic_hosts=1000)
# How often the retry baseline asks Placement whether victims are gone.
POLL_SECONDS = 0.005


def summary(samples):
    return '%7.2f ms (median %.2f, sd %.2f, n=%d)' % (
        statistics.mean(samples) * 1000, statistics.median(samples) * 1000,
        statistics.pstdev(samples) * 1000, len(samples))


class CloudLatency(cloud.OpieCloud):
    CAST_AS_CALL = False

    def runTest(self):
        self.context = nova_context.get_admin_context()
        self.opie = self.scheduler.manager
        self.compute_api = compute_api.API()
        self.flags(enabled_filters=harness.NOVA_FILTERS,
                   weight_classes=NOVA_WEIGHERS, group='filter_scheduler')
        self.stock = nova_manager.SchedulerManager()
        self.flags(
            enabled_filters=harness.NOVA_FILTERS + ['PreemptibleFilter'],
            group='filter_scheduler')
        self.safe = nova_manager.SchedulerManager()
        self.specs = {kind: self.request_spec(
            'medium', preemptible=kind == 'preemptible')
            for kind in ('normal', 'preemptible')}
        self.count_placement_calls(PLACEMENT_CALLS)

        results = self.empty()
        self.saturate()
        name = 'OPIE, saturated, normal (1 termination)'
        results[name] = self.saturated(
            lambda: self.select(self.opie, 'normal'))
        CALLS[name] = self.last_calls
        results['retry, saturated, normal (1 termination)'] = (
            self.saturated(lambda: self.retry('normal')))
        RESULTS['cloud'] = results

    def select(self, manager, kind, placed=True):
        """Time one select_destinations call; ``placed=False`` expects
        NoValidHost."""
        spec = copy.deepcopy(self.specs[kind])
        spec.instance_uuid = uuidutils.generate_uuid()
        del PLACEMENT_CALLS[:]
        started = time.perf_counter()
        try:
            manager.select_destinations(
                self.context, spec_obj=spec,
                instance_uuids=[spec.instance_uuid], return_objects=True,
                return_alternates=True)
        except messaging.ExpectedException as exc:
            assert isinstance(exc.exc_info[1], exception.NoValidHost)
            assert not placed, 'no valid host: %s' % exc.exc_info[1]
            return time.perf_counter() - started
        elapsed = time.perf_counter() - started
        self.last_calls = list(PLACEMENT_CALLS)
        assert placed, 'the saturated cloud had room'
        # The server is never built: give its room back.
        manager.placement_client.delete_allocation_for_instance(
            self.context, spec.instance_uuid, force=True)
        return elapsed

    def retry(self, kind):
        """Fail, free OPIE's victims, wait for Placement, schedule again."""
        elapsed = self.select(self.safe, kind, placed=False)
        started = time.perf_counter()
        victims = self.victims(kind)
        for victim in victims:
            self.compute_api.delete(
                self.context, self.compute_api.get(self.context, victim))
        client = self.safe.placement_client
        while any(client.get_allocs_for_consumer(
                self.context, victim)['allocations'] for victim in victims):
            time.sleep(POLL_SECONDS)
        elapsed += time.perf_counter() - started
        return elapsed + self.select(self.safe, kind)

    def victims(self, kind):
        """The victims OPIE's core chooses on the cloud as Placement and
        the cell database have it now."""
        client = self.safe.placement_client
        records = [host_records.record_from_placement(client, self.context,
                                                      host_state)
                   for host_state in self.safe.host_manager
                   .get_host_states_by_uuids(self.context, None, None)]
        host_records.InstanceLoader(self.context, self.safe.host_manager.cells,
                                    client)(records)
        settings = self.opie.settings
        decision = scheduling.schedule(
            host_records.request_of(self.specs[kind]),
            [r.core_host() for r in records], settings.cost_model,
            timeutils.utcnow(), settings.max_victims, settings.ranking)
        assert decision.victims, decision.reason
        return [victim.uuid for victim in decision.victims]

    def empty(self):
        """Stock and OPIE calls interleaved, so that drift hits both."""
        runs = {'stock, empty, normal': (self.stock, 'normal'),
                'OPIE, empty, normal': (self.opie, 'normal'),
                'OPIE, empty, preemptible': (self.opie, 'preemptible')}
        samples = {name: [] for name in runs}
        for i in range(ARGS.iterations + 1):
            for name, (manager, kind) in runs.items():
                elapsed = self.select(manager, kind)
                if i:       # the first round warms caches
                    samples[name].append(elapsed)
                    CALLS[name] = self.last_calls
        return samples

    def saturate(self):
        for host in self.HOSTS:
            for i in range(4):
                self.refill(host, i * 17)

    def refill(self, host, minutes):
        server = self.boot('medium', 'p-%s-%d' % (host, minutes), host=host,
                           preemptible=True)
        self.set_launched_at(server['id'], minutes)

    def saturated(self, measure):
        samples = []
        for i in range(ARGS.iterations):
            before = {s['id']: s for s in self.api.get_servers()}
            samples.append(measure())
            # Victims are being deleted (casts stay asynchronous).
            self.wait_for_terminations()
            after = {s['id'] for s in self.api.get_servers()
                     if s['OS-EXT-STS:task_state'] != 'deleting'}
            for uuid in set(before) - after:
                victim = before[uuid]
                self._wait_until_deleted(victim)
                self.refill(victim['OS-EXT-SRV-ATTR:host'], 100 + i)
        return samples


class SyntheticHosts(cloud.OpieCloud):
    """Nova's filter and weigher handlers over synthetic host states."""
    HOSTS = ('host-A',)

    def runTest(self):
        context = nova_context.get_admin_context()
        template = next(iter(self.scheduler.manager.host_manager
                             .get_host_states_by_uuids(context, None, None)))
        spec = objects.RequestSpec.get_by_instance_uuid(
            context, self.boot('medium', 'template')['id'])
        spec.requested_resources = []
        settings = self.scheduler.manager.settings
        results = RESULTS['synthetic'] = {}
        for saturated in (False, True):
            state = 'saturated' if saturated else 'empty'
            hosts = [self.host_state(template, i, saturated)
                     for i in range(ARGS.synthetic_hosts)]
            results['stock, %s, normal' % state] = self.measure(hosts, spec)
            results['OPIE, %s, normal' % state] = self.measure(
                hosts, spec, settings, saturated)

    @staticmethod
    def host_state(template, index, saturated):
        host = copy.copy(template)
        host.host = host.nodename = 'synthetic-%04d' % index
        host.uuid = uuidutils.generate_uuid()
        host.instances = {}
        if saturated:
            host.vcpus_used = host.vcpus_total
            host.free_ram_mb = host.total_usable_ram_mb - 16000
        return host

    def handlers(self, stock):
        names = harness.NOVA_FILTERS + (
            [] if stock else ['PreemptibleFilter'])
        filter_handler = filters.HostFilterHandler()
        classes = {cls.__name__: cls for cls in
                   filter_handler.get_matching_classes(
                       ['nova.scheduler.filters.all_filters',
                        'opie.nova.filters.PreemptibleFilter'])}
        weigher_handler = weights.HostWeightHandler()
        weighers = [cls() for cls in weigher_handler.get_matching_classes(
            NOVA_WEIGHERS + ([] if stock else OPIE_WEIGHERS))]
        return (filter_handler, [classes[n]() for n in names],
                weigher_handler, weighers)

    def measure(self, hosts, spec, settings=None, saturated=False):
        """Stock Nova's handlers, or OPIE's when ``settings`` are given."""
        filter_handler, filter_objs, weigher_handler, weighers = (
            self.handlers(stock=settings is None))
        samples = []
        for _ in range(ARGS.iterations + 1):
            started = time.perf_counter()
            if settings is None:
                self.run_handlers(hosts, spec, filter_handler, filter_objs,
                                  weigher_handler, weighers)
            else:
                plan = self.synthetic_plan(hosts, spec, settings, saturated)
                with plan_mod.activated(plan):
                    self.run_handlers(hosts, spec, filter_handler,
                                      filter_objs, weigher_handler,
                                      weighers)
            samples.append(time.perf_counter() - started)
        return samples[1:]

    @staticmethod
    def run_handlers(hosts, spec, filter_handler, filter_objs,
                     weigher_handler, weighers):
        passed = list(filter_handler.get_filtered_objects(
            filter_objs, hosts, spec, 0))
        weighed = weigher_handler.get_weighed_objects(weighers, passed, spec)
        assert weighed, 'no host passed'

    @staticmethod
    def synthetic_plan(hosts, spec, settings, saturated):
        now = timeutils.utcnow()
        medium = res.Resources(2, 4000, 40)

        def load(records, fresh=False):
            for r in records:
                r.preemptibles = [core_host.Instance(
                    uuid='%s-%d' % (r.uuid, i), resources=medium,
                    preemptible=True,
                    launched_at=now - datetime.timedelta(minutes=17 * i + 3))
                    for i in range(4)]

        plan = plan_mod.Plan(None, host_records.request_of(spec), settings,
                             load_instances=load,
                             operation=lambda: operations.BOOT,
                             now=now)
        capacity = res.Resources(8, 16384, 1000)
        for host in hosts:
            used = res.Resources(8, 16000, 160) if saturated else res.ZERO
            plan.add(host_records.HostRecord(
                uuid=host.uuid, host=host.host, nodename=host.nodename,
                cell_uuid=host.cell_uuid, capacity=capacity,
                normal_used=res.ZERO, preemptible_used=used))
        return plan


RESULTS = {}
# Placement requests of the select_destinations call being timed, and of
# the last placed call of each case: case -> [request, ...].
PLACEMENT_CALLS = []
CALLS = {}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--iterations', type=int, default=20)
    parser.add_argument('--hosts', type=int, default=8,
                        help='computes of the in-process cloud')
    parser.add_argument('--synthetic-hosts', type=int, default=1000)
    parser.parse_args(namespace=ARGS)
    CloudLatency.HOSTS = tuple('host-%02d' % i for i in range(ARGS.hosts))
    if not cloud.run_quietly([CloudLatency(), SyntheticHosts()]):
        return 1
    report()
    return 0


def ratio(samples, over):
    """Mean and median ratios: other processes on the machine show up as
    outliers, which move the mean much more than the median."""
    return 'mean %.2f, median %.2f' % (
        statistics.mean(samples) / statistics.mean(over),
        statistics.median(samples) / statistics.median(over))


def report():
    cloud, synthetic = RESULTS['cloud'], RESULTS['synthetic']
    print('In-process Nova 34 + Placement, %d computes, casts async, '
          '%d iterations each' % (ARGS.hosts, ARGS.iterations))
    for name, samples in cloud.items():
        print('  %-42s %s' % (name, summary(samples)))
    stock = cloud['stock, empty, normal']
    opie_full = cloud['OPIE, saturated, normal (1 termination)']
    retry = cloud['retry, saturated, normal (1 termination)']
    print('  OPIE / stock, empty, normal:       %s (goal <= 1.15)'
          % ratio(cloud['OPIE, empty, normal'], stock))
    print('  OPIE / stock, empty, preemptible:  %s (goal <= 1.15)'
          % ratio(cloud['OPIE, empty, preemptible'], stock))
    print('  OPIE saturated / stock empty:      %s (goal <= 1.5)'
          % ratio(opie_full, stock))
    print('  retry / OPIE, saturated:           %s (goal >= 2)'
          % ratio(retry, opie_full))
    print('Placement requests of one placed request (the last of each '
          'case):')
    for name, calls in CALLS.items():
        print('  %-42s %d: %s' % (name, len(calls), ', '.join(calls)))
    print('Nova filter + weigher handlers, %d synthetic hosts'
          % ARGS.synthetic_hosts)
    for name, samples in synthetic.items():
        print('  %-42s %s' % (name, summary(samples)))
    for state in ('empty', 'saturated'):
        print('  OPIE / stock, %-9s normal:        %s' % (
            state + ',', ratio(synthetic['OPIE, %s, normal' % state],
                               synthetic['stock, %s, normal' % state])))


if __name__ == '__main__':
    sys.exit(main())
