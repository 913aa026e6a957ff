"""``opie-bot``: plan, run or simulate a Bag-of-Tasks job.

Exit codes: 0 done (deadline met), 1 deadline missed, 2 bad input (job
file, trace, options), reported in one line per problem, never as a
traceback.
"""
import argparse
import json
import os
import sys

from opie.bot import html
from opie.bot import jobfile
from opie.bot import model
from opie.bot import planner
from opie.bot import report
from opie.bot import scenarios
from opie.bot import stats
from opie.bot.sim import backend
from opie.bot.sim import preemption

EXIT_MISSED = 1
EXIT_INPUT = 2


class InputError(Exception):
    """Bad input the user can fix; the message says what and where."""


def _load_plan(args):
    try:
        job = jobfile.load(args.job)
    except jobfile.JobFileError as exc:
        raise InputError(str(exc)) from None
    try:
        plan = planner.primary_map(job)
    except planner.PlanError as exc:
        raise InputError('%s: %s' % (args.job, exc)) from None
    if getattr(args, 'normal_limit', None) is not None:
        plan = plan.with_job(job.with_limits(
            args.normal_limit, args.max_normal or job.policy.max_normal))
    return plan


def _fmt_time(seconds):
    return '%d:%02d' % divmod(int(round(seconds)), 60)


def cmd_plan(args):
    plan = _load_plan(args)
    base = planner.normal_only(plan)
    job = plan.job
    print('job %s: %d tasks, deadline %s, Dspot %s (%s)'
          % (job.name, len(job.tasks), _fmt_time(job.deadline_s),
             _fmt_time(plan.dspot), job.policy.dspot))
    for s in plan.servers:
        print('  %-5s %-10s %-11s %3d tasks, ends %s, $%.4f'
              % (s.key, s.flavor.name, s.market, len(s.tasks),
                 _fmt_time(s.finish), s.expected_cost))
    print('%d preemptible and %d normal servers; expected makespan %s, '
          'cost $%.4f; normal-only $%.4f (saving %.1f %%)'
          % (plan.count(model.PREEMPTIBLE), plan.count(model.NORMAL),
             _fmt_time(plan.makespan), plan.expected_cost,
             base.expected_cost,
             100 * (1 - plan.expected_cost / base.expected_cost)))
    for risk in plan.risks:
        print('risk: %s' % risk)
    return 0


def _preemption_args(args, job):
    if args.trace:
        try:
            return {'trace': preemption.read_trace(args.trace, job.flavors)}
        except preemption.TraceError as exc:
            raise InputError(str(exc)) from None
    if args.scenario:
        sc = scenarios.TABLE8[args.scenario]
        return {'kh': sc.kh, 'kr': sc.kr}
    return {'kh': args.kh, 'kr': args.kr}


def _progress_line(snap):
    print('[%6.0f s] done %d/%d  running %d  servers %d (normal %d, '
          'hibernated %d)  cost $%.4f  slack %.0f s'
          % (snap['t'], snap['done'], snap['tasks'], snap['running'],
             snap['servers'], snap['normal'], snap['hibernated'],
             snap['cost'], snap['slack']), flush=True)


def cmd_run(args):
    plan = _load_plan(args)
    job = plan.job
    kwargs = _preemption_args(args, job)
    result = backend.run(plan, seed=args.seed, mode=args.mode,
                         progress=None if args.quiet else _progress_line,
                         progress_every=args.progress_every, **kwargs)
    rep = report.build(result, report.baseline(plan, backend.run))
    os.makedirs(args.report_dir, exist_ok=True)
    stem = os.path.join(args.report_dir, '%s-%s-seed%d' % (
        job.name, args.scenario or 'run', args.seed))
    with open(stem + '.json', 'w', encoding='utf-8') as f:
        json.dump(rep, f, indent=1)
    with open(stem + '.html', 'w', encoding='utf-8') as f:
        f.write(html.render(rep))
    res = rep['result']
    print('%s: makespan %s (deadline %s, %s), cost $%.4f vs normal-only '
          '$%.4f (saving %.1f %%)' % (
              job.name, 'n/a' if res['makespan_s'] is None
              else _fmt_time(res['makespan_s']), _fmt_time(job.deadline_s),
              'met' if res['deadline_met'] else 'MISSED', res['cost'],
              res['baseline_cost'], 100 * res['saving']))
    for note in rep['misses']:
        print('miss: %s' % note)
    print('report: %s.json, %s.html' % (stem, stem))
    return 0 if res['deadline_met'] else EXIT_MISSED


def cmd_sim(args):
    plan = _load_plan(args)
    try:
        chosen = scenarios.parse_list(args.scenarios)
    except ValueError as exc:
        raise InputError(str(exc)) from None

    def simulate(p, sc, seed):
        return backend.run(p, kh=sc.kh, kr=sc.kr, seed=seed, mode=args.mode)

    cells = stats.run_cells(plan, chosen, args.seeds, simulate)
    base = report.baseline(plan, backend.run)['cost']
    header, body = stats.rows(cells, base)
    print('%s, %s mode, %d seeds; normal-only baseline $%.3f; mean '
          '[P10-P90]' % (plan.job.name, args.mode, args.seeds, base))
    print(stats.text_table(header, body))
    return EXIT_MISSED if any(c.misses for c in cells) else 0


def _limit_options(parser):
    parser.add_argument('--normal-limit', type=int, metavar='N',
                        help='replace every flavor\'s normal limit')
    parser.add_argument('--max-normal', type=int, metavar='N',
                        help='with --normal-limit: the total normal limit')


def parser():
    p = argparse.ArgumentParser(prog='opie-bot', description=__doc__)
    sub = p.add_subparsers(dest='command', required=True)

    sp = sub.add_parser('plan', help='Dspot, primary map, expected cost')
    sp.add_argument('job')
    sp.set_defaults(func=cmd_plan)

    sp = sub.add_parser('run', help='run a job, with progress and a report')
    sp.add_argument('job')
    sp.add_argument('--backend', choices=['sim'], default='sim')
    group = sp.add_mutually_exclusive_group()
    group.add_argument('--scenario', choices=list(scenarios.TABLE8),
                       help='preemption scenario of HADS Table 8')
    group.add_argument('--trace', metavar='CSV',
                       help='replay preemptions (time_s,flavor,event)')
    sp.add_argument('--kh', type=float, default=0.0,
                    help='expected preemptions per flavor over D')
    sp.add_argument('--kr', type=float, default=0.0,
                    help='expected resumes per flavor over D')
    sp.add_argument('--seed', type=int, default=0)
    sp.add_argument('--mode', choices=preemption.MODES,
                    default=preemption.HIBERNATE)
    sp.add_argument('--report-dir', default='opie-bot-reports')
    sp.add_argument('--progress-every', type=float, default=120.0,
                    metavar='SECONDS', help='simulated seconds per line')
    sp.add_argument('--quiet', action='store_true')
    _limit_options(sp)
    sp.set_defaults(func=cmd_run)

    sp = sub.add_parser('sim', help='statistics over scenarios and seeds')
    sp.add_argument('job')
    sp.add_argument('--scenarios', default='sc1..sc7')
    sp.add_argument('--seeds', type=int, default=10)
    sp.add_argument('--mode', choices=preemption.MODES,
                    default=preemption.HIBERNATE)
    _limit_options(sp)
    sp.set_defaults(func=cmd_sim)
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    if getattr(args, 'seeds', 1) < 1:
        print('opie-bot: --seeds must be at least 1', file=sys.stderr)
        return EXIT_INPUT
    try:
        return args.func(args)
    except InputError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INPUT
