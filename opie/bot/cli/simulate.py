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

"""``opie-bot sim``: statistics over scenarios and seeds."""
from opie.bot.report import report
from opie.bot.sim import scenarios
from opie.bot.report import stats
from opie.bot.sim import backend
from opie.bot.cli import common


def cmd_sim(args):
    try:
        chosen = scenarios.parse_list(args.scenarios)
    except ValueError as exc:
        raise common.InputError(str(exc)) from None
    plan = common.load_plan(args)

    notice = args.notice or 0.0

    def simulate(p, sc, seed):
        return backend.run(p, kh=sc.kh, kr=sc.kr, seed=seed, mode=args.mode,
                           notice_s=notice)

    cells = stats.run_cells(plan, chosen, args.seeds, simulate)
    base = report.baseline(plan, backend.run)['cost']
    # Asked for a notice, even of 0, the table shows the work lost.
    header, body = stats.rows(cells, base, lost=args.notice is not None)
    code = common.EXIT_MISSED if any(c.misses for c in cells) else 0
    if common.is_json(args):
        common.print_json({'job': plan.job.name, 'mode': args.mode,
                           'notice_s': notice,
                           'seeds': args.seeds, 'baseline_cost': base,
                           'rows': [dict(zip(header, row))
                                    for row in body]})
        return code
    print('%s, %s mode%s, %d seeds; normal-only baseline $%.3f; mean '
          '[P10-P90]' % (plan.job.name, args.mode,
                         '' if args.notice is None
                         else ', notice %g s' % notice, args.seeds, base))
    print(stats.text_table(header, body))
    return code
