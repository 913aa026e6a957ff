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

"""opie-bot simulator benchmark and the scenario statistics table.

Prints the wall time of one simulated ED200 run, of planning and
simulating a 10,000-task job (run times 60-600 s on the HADS Table 6
flavors, 100 servers per flavor, deadline 4 h), then runs the seven
scenarios of HADS Table 8 on the four paper jobs and writes the table of
mean and P10-P90 to doc/source/tenant/scenario-table.rst.

    python benchmarks/bot_sim.py [--seeds 100] [--no-table]
"""
import argparse
import pathlib
import time

from opie.bot.job import jobfile
from opie.bot.sim import map_choice
from opie.bot.report import report
from opie.bot.sim import scenarios
from opie.bot.report import stats
from opie.bot.sim import backend

ROOT = pathlib.Path(__file__).resolve().parent.parent
JOBS = ROOT / 'examples' / 'jobs'
TABLE = ROOT / 'doc' / 'source' / 'tenant' / 'scenario-table.rst'
PAPER_JOBS = ('j60', 'j80', 'j100', 'ed200')


def timed(fn, repeat=1):
    """Best wall time of ``repeat`` calls, and the last result."""
    best = None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        took = time.perf_counter() - start
        best = took if best is None else min(best, took)
    return best, out


def big_job(tasks=10000):
    """The Table 6 catalogue, 100 servers per flavor, a 4 h deadline."""
    j60 = jobfile.load(JOBS / 'j60.yaml')
    text = (JOBS / 'j60.yaml').read_text()
    head = text[:text.index('generate:')]
    head = head.replace('{preemptible: 5, normal: 5}',
                        '{preemptible: 100, normal: 100}')
    head = head.replace('deadline_s: 2100', 'deadline_s: 14400')
    head = head.replace('max_normal: 20', 'max_normal: 400')
    head = head.replace('name: j60', 'name: bot%d' % tasks)
    assert len(j60.flavors) == 4
    return jobfile.parse(head + (
        'generate:\n'
        '  - {id: "t{i:05d}", count: %d, seed: 1,\n'
        '     runtime_s: {min: 60, avg: 330, max: 600},\n'
        '     memory_mb: {min: 10, avg: 50, max: 200}}\n' % tasks),
        'bot%d' % tasks)


def speed():
    ed200 = map_choice.primary_map(jobfile.load(JOBS / 'ed200.yaml'))
    sc = scenarios.TABLE8['sc4']
    took, result = timed(lambda: backend.run(ed200, kh=sc.kh, kr=sc.kr,
                                             seed=1), repeat=5)
    rep = report.build(result)
    print('ED200, one simulated run (sc4, seed 1): %.3f s  [goal < 1 s]; '
          'makespan %.0f s, %d migrations'
          % (took, rep['result']['makespan_s'], rep['counts']['migrations']))
    took_load, job = timed(big_job)
    for sc in (None, scenarios.TABLE8['sc5']):
        took_plan, plan = timed(lambda: map_choice.primary_map(job))
        kwargs = {'kh': sc.kh, 'kr': sc.kr, 'seed': 1} if sc else {}
        took_sim, result = timed(lambda: backend.run(plan, **kwargs))
        rep = report.build(result)
        print('10,000 tasks (%s): job file %.2f s, plan %.2f s (%d servers, '
              'Dspot %.0f s), simulation %.2f s, total %.2f s  '
              '[goal < 30 s]; makespan %.0f s of %.0f, %d migrations, '
              'cost $%.2f' % (sc.name if sc else 'no preemption', took_load,
                              took_plan, len(plan.servers), plan.dspot,
                              took_sim, took_load + took_plan + took_sim,
                              rep['result']['makespan_s'], job.deadline_s,
                              rep['counts']['migrations'],
                              rep['result']['cost']))


def table(seeds):
    sections = []
    for name in PAPER_JOBS:
        plan = map_choice.primary_map(jobfile.load(JOBS / ('%s.yaml' % name)))

        def simulate(p, sc, seed):
            return backend.run(p, kh=sc.kh, kr=sc.kr, seed=seed)

        start = time.perf_counter()
        cells = stats.run_cells(plan, scenarios.TABLE8.values(), seeds,
                                simulate)
        base = report.baseline(plan, backend.run)['cost']
        header, body = stats.rows(cells, base)
        print('\n%s: normal-only baseline $%.3f; %d runs in %.1f s'
              % (name, base, 7 * seeds, time.perf_counter() - start))
        print(stats.text_table(header, body))
        sections.append((name, plan, base, header, body))
    write_rst(sections, seeds)


def write_rst(sections, seeds):
    out = [
        '.. This file is written by benchmarks/bot_sim.py; do not edit.',
        '',
        'Scenario statistics',
        '===================',
        '',
        'HADS Table 8 scenarios on the four paper jobs, simulated with',
        'opie-bot\'s default backend: hibernate mode, the paper\'s limits',
        '(5 normal servers per flavor, 20 in all), %d seeds per cell.'
        % seeds,
        'Each cell gives the mean and, in brackets, the P10-P90 range.',
        '"saving" compares the mean cost with the normal-only baseline',
        '(the same primary map on normal servers, simulated too);',
        '"misses" counts runs that ended after the deadline.',
        '',
    ]
    for name, plan, base, header, body in sections:
        title = '%s (%d tasks, %d preemptible servers planned, Dspot ' \
                '%.0f s, normal-only $%.3f)' % (name.upper(),
                                                len(plan.job.tasks),
                                                len(plan.servers),
                                                plan.dspot, base)
        out += [title, '-' * len(title), '',
                stats.rst_table(header, body), '']
    TABLE.parent.mkdir(parents=True, exist_ok=True)
    TABLE.write_text('\n'.join(out))
    print('\nwrote %s' % TABLE.relative_to(ROOT))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seeds', type=int, default=100)
    parser.add_argument('--no-table', action='store_true')
    args = parser.parse_args()
    speed()
    if not args.no_table:
        table(args.seeds)


if __name__ == '__main__':
    main()
