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

"""Where a preempting request's time goes, host by host.

On ``benchmarks/scale.py``'s saturated cloud (N nodes of 20 preemptibles,
every vCPU taken, so every host needs a victim search), each timed
request is cut into phases (Placement's candidates, Nova's host states,
filters and weighers; OPIE's assessment of each host, its victim search,
the instance reads and their one query per cell, the budget read; the
claim) and counts the hosts whose instances were read and the hosts
assessed. Requests alternate between
the plan as it is and the plan with nothing told from Placement's usages
(``Plan._refused_unread`` answering no: the reference of
``tests/functional/plugin/test_ranking_oracle.py``), and the ratio of
hosts read is printed. See ``doc/source/design/ranking.rst``.

Run from the repository root: ``python benchmarks/ranking.py [--nodes
200] [--iterations 2]``; ``scale.py``'s own cases run too (it builds the
cloud) and its table is printed first.
"""
import nova.tests.functional  # noqa: F401 (monkey patching comes first)

import argparse  # noqa: E402
import collections  # noqa: E402
import contextlib  # noqa: E402
import functools  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from unittest import mock  # noqa: E402

from nova.scheduler import host_manager  # noqa: E402
from nova.scheduler import manager as nova_manager  # noqa: E402

from opie.core import scheduling  # noqa: E402
from opie.core import victims  # noqa: E402
from opie.nova import manager as opie_manager  # noqa: E402
from opie.nova.request import host_records  # noqa: E402
from opie.nova.request import instance_cache  # noqa: E402
from opie.nova.request import plan as plan_mod  # noqa: E402
from opie.testing import cloud  # noqa: E402
import scale  # noqa: E402 (benchmarks/, beside this file)

ASSESSED = "  OPIE's assessment of a host"
# (owner, function, phase): timed per request, and counted.
PHASES = (
    (nova_manager.SchedulerManager, 'select_destinations',
     'select_destinations (all)'),
    (opie_manager.ClaimingClient, 'get_allocation_candidates',
     "Placement's candidates"),
    (nova_manager.SchedulerManager, '_get_all_host_states',
     "Nova's host states"),
    (host_manager.HostManager, 'get_filtered_hosts',
     "Nova's filters (OPIE's among them)"),
    (plan_mod.Plan, '_assess', ASSESSED),
    (scheduling, 'assess_host', '    the core (costs, victim search)'),
    (victims, 'select', '      the victim search'),
    (plan_mod.Plan, '_budgets', '    budgets left (read once)'),
    (host_records.InstanceLoader, '__call__', '  instance reads'),
    (instance_cache.InstanceCache, '_catch_up',
     '    query per cell (changes)'),
    (host_manager.HostManager, 'get_weighed_hosts',
     "Nova's weighers (OPIE's among them)"),
    (opie_manager.ClaimingClient, 'claim_resources',
     'the claim (victims read again, one write)'),
)
MODES = ('as it is', 'every host read')


class RankingCloud(scale.ScaleCloud):

    def measure(self, managers, restore=(), settle=None):
        """scale.py's cases, then on the saturated cloud (its instances
        kept by then) the probed requests."""
        cases = super().measure(managers, restore, settle)
        if restore:
            self.phases = {mode: collections.Counter() for mode in MODES}
            self.counts = {mode: collections.Counter() for mode in MODES}
            for _ in range(scale.ARGS.iterations):
                for mode in MODES:
                    with self.probed(mode):
                        self.select(self.opie, restore=True)
            RESULTS[self.NODES] = self.phases, self.counts
        return cases

    @contextlib.contextmanager
    def probed(self, mode):
        phases, counts = self.phases[mode], self.counts[mode]
        loads = host_records.InstanceLoader.__call__

        def read(loader, records, fresh=False):
            counts['hosts read'] += len(records)
            return loads(loader, records, fresh)

        with contextlib.ExitStack() as stack:
            if mode != MODES[0]:
                stack.enter_context(mock.patch.object(
                    plan_mod.Plan, '_refused_unread', return_value=False))
            stack.enter_context(mock.patch.object(
                host_records.InstanceLoader, '__call__', read))
            for owner, name, phase in PHASES:
                stack.enter_context(mock.patch.object(
                    owner, name, _timed(getattr(owner, name), phase,
                                        phases, counts)))
            yield


def _timed(function, phase, phases, counts):
    @functools.wraps(function)
    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            phases[phase] += time.perf_counter() - started
            counts[phase] += 1
    return timed


RESULTS = {}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--nodes', type=int, nargs='+', default=[200])
    parser.add_argument('--iterations', type=int, default=2)
    parser.parse_args(namespace=scale.ARGS)
    if min(scale.ARGS.nodes) < 1 or scale.ARGS.iterations < 1:
        parser.error('--nodes and --iterations must be at least 1')
    if not cloud.run_quietly(
            [type('RankingCloud%d' % n, (RankingCloud,), {'NODES': n})()
             for n in scale.ARGS.nodes]):
        return 1
    scale.report()
    report()
    return 0


def report():
    calls = scale.ARGS.iterations
    for nodes, (phases, counts) in RESULTS.items():
        print('\n%d nodes, saturated: ms per request (calls per request), '
              'the mean of %d requests each' % (nodes, calls))
        print('%-40s %22s %22s' % ('phase', *MODES))
        for _, _, phase in PHASES:
            print('%-40s %22s %22s' % (phase, *(
                '%.1f (%g)' % (phases[mode][phase] * 1000 / calls,
                               counts[mode][phase] / calls)
                for mode in MODES)))
        read, reference = (counts[mode]['hosts read'] / calls
                           for mode in MODES)
        assessed, every = (counts[mode][ASSESSED] / calls
                           for mode in MODES)
        print('hosts whose instances were read per request: %g, every host '
              'read %g: ratio %.2f' % (read, reference, read / reference))
        print('hosts assessed per request: %g, every host read %g: ratio '
              '%.2f' % (assessed, every, assessed / every))


if __name__ == '__main__':
    sys.exit(main())
