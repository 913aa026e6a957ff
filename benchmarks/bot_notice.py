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

"""The preemption notice on the paper's jobs: lost work and cost.

Runs the seven scenarios of HADS Table 8 on the four paper jobs, in
terminate mode (OPIE's) and hibernate mode (HEM's), with a notice of 0, 30
and 120 s, and prints per job and notice the mean and P10-P90 over all
scenarios and seeds; writes the same tables to
doc/source/tenant/notice-table.inc, which the "Preemption notice" page
includes.

    python benchmarks/bot_notice.py [--seeds 20] [--notices 0,30,120]
"""
import argparse
import pathlib

from opie.bot.job import jobfile
from opie.bot.sim import map_choice
from opie.bot.report import report
from opie.bot.sim import scenarios
from opie.bot.report import stats
from opie.bot.sim import backend
from opie.bot.sim import preemption

ROOT = pathlib.Path(__file__).resolve().parent.parent
JOBS = ROOT / 'examples' / 'jobs'
TABLE = ROOT / 'doc' / 'source' / 'tenant' / 'notice-table.inc'
PAPER_JOBS = ('j60', 'j80', 'j100', 'ed200')


def cells(plan, mode, notices, seeds):
    """One cell per notice: every scenario and seed of ``plan``."""
    out = []
    for notice in notices:
        runs = []
        for sc in scenarios.TABLE8.values():
            for seed in range(seeds):
                runs.append(stats.metrics(backend.run(
                    plan, kh=sc.kh, kr=sc.kr, seed=seed, mode=mode,
                    notice_s=notice)))
        out.append(stats.Cell('%s, %g s' % (plan.job.name, notice), runs))
    return out


def table(mode, notices, seeds):
    header, body = None, []
    for name in PAPER_JOBS:
        plan = map_choice.primary_map(jobfile.load(JOBS / ('%s.yaml' % name)))
        base = report.baseline(plan, backend.run)['cost']
        header, rows = stats.rows(cells(plan, mode, notices, seeds), base,
                                  lost=True)
        body += rows
    header[0] = 'job, notice'
    return header, body


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seeds', type=int, default=20)
    parser.add_argument('--notices', default='0,30,120')
    args = parser.parse_args()
    notices = [float(n) for n in args.notices.split(',')]
    out = ['.. Written by benchmarks/bot_notice.py --seeds %d --notices %s;'
           ' do not edit.' % (args.seeds, args.notices), '']
    for mode in (preemption.TERMINATE, preemption.HIBERNATE):
        header, body = table(mode, notices, args.seeds)
        print('\n%s mode, sc1..sc7 x %d seeds per cell; mean [P10-P90]'
              % (mode, args.seeds))
        print(stats.text_table(header, body))
        title = '%s mode' % mode.capitalize()
        out += [title, '~' * len(title), '', stats.rst_table(header, body),
                '']
    TABLE.write_text('\n'.join(out))
    print('\nwrote %s' % TABLE.relative_to(ROOT))


if __name__ == '__main__':
    main()
