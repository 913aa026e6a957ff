"""``opie-bot``: plan, run or simulate a Bag-of-Tasks job.

``run`` uses the simulated cloud unless ``--backend openstack``; a job on
a cloud has a journal, so ``resume``, ``status`` and ``cancel`` take its
id.  ``demo`` runs a job on an in-process OpenStack cloud.

Exit codes: 0 done (deadline met), 1 deadline missed (or not finished),
2 bad input (job file, trace, options, journal), 3 the cloud refused or
lacks something (credentials, endpoint, flavor, image, store), reported
in one line per problem, never as a traceback.
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
EXIT_CLOUD = 3


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


def _summary(job, rep, stem):
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


def cmd_run(args):
    if args.backend == 'openstack':
        return _cloud_command(_run_openstack, args)
    plan = _load_plan(args)
    job = plan.job
    kwargs = _preemption_args(args, job)
    result = backend.run(plan, seed=args.seed, mode=args.mode,
                         progress=None if args.quiet else _progress_line,
                         progress_every=args.progress_every, **kwargs)
    rep = report.build(result, report.baseline(plan, backend.run))
    stem = _write_report(rep, args.report_dir, '%s-%s-seed%d' % (
        job.name, args.scenario or 'run', args.seed))
    return _summary(job, rep, stem)


def _write_report(rep, directory, name):
    """Write ``rep`` as DIRECTORY/NAME.json and .html; return the stem."""
    os.makedirs(directory, exist_ok=True)
    stem = os.path.join(directory, name)
    with open(stem + '.json', 'w', encoding='utf-8') as f:
        json.dump(rep, f, indent=1)
    with open(stem + '.html', 'w', encoding='utf-8') as f:
        f.write(html.render(rep))
    return stem


def _cloud_command(command, args):
    """Run a command that needs the cloud backend; its errors are one
    line (imported here: the sim backend needs no cloud library)."""
    from opie.bot.openstack import live
    try:
        return command(live, args)
    except live.CloudError as exc:
        print('opie-bot: %s' % exc, file=sys.stderr)
        return EXIT_CLOUD
    except KeyboardInterrupt:
        # The journal has every step: the job is only paused.
        print('opie-bot: interrupted; the servers keep running, '
              'opie-bot resume (or cancel) JOB_ID', file=sys.stderr)
        return EXIT_MISSED
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _settings(live, args):
    return live.Settings(
        cloud=args.os_cloud, image=args.image, network=args.network,
        store=args.store, speed=args.speed, poll_s=args.poll,
        agent_poll_s=args.agent_poll, retries=args.retries)


def _drive(live, ctx, args):
    progress = None if args.quiet else _progress_line
    finished = live.loop(ctx, progress,
                         ctx.clock.wall_s(args.progress_every))
    rep = live.build_report(ctx)
    stem = _write_report(rep, args.report_dir, ctx.job_id)
    code = _summary(ctx.plan.job, rep, stem)
    counts = rep['counts']
    print('preemptions %d, migrations %d, checkpoints %d, restores %d, '
          'duplicate runs %d, client resumes %d' % (
              counts['servers_terminated'] + counts['servers_hibernated'],
              counts['migrations'], counts['checkpoints'],
              counts['restores'], counts['duplicate_runs'],
              counts['client_resumes']))
    return code if finished else EXIT_MISSED


def _run_openstack(live, args):
    plan = _load_plan(args)
    ctx = live.start(plan, args.job, _settings(live, args),
                     args.journal_dir)
    return _drive(live, ctx, args)


def cmd_resume(args):
    def resume(live, args):
        ctx = live.resume(args.journal_dir, args.job_id, args.os_cloud)
        print('job %s resumed' % ctx.job_id, flush=True)
        return _drive(live, ctx, args)
    return _cloud_command(resume, args)


def cmd_status(args):
    def status(live, args):
        st = live.status(args.journal_dir, args.job_id)
        print('job %(job_id)s: %(status)s, %(done)d/%(tasks)d tasks done '
              'at t=%(t).0f s' % st)
        print('live servers: %d preemptible, %d normal; preemptions %d, '
              'migrations %d, duplicate runs %d' % (
                  st['servers'][model.PREEMPTIBLE],
                  st['servers'][model.NORMAL], st['preemptions'],
                  st['migrations'], st['duplicate_runs']))
        return 0
    return _cloud_command(status, args)


def cmd_cancel(args):
    def cancel(live, args):
        live.cancel(args.journal_dir, args.job_id, args.os_cloud)
        print('job %s cancelled: its servers and objects are deleted'
              % args.job_id)
        return 0
    return _cloud_command(cancel, args)


def cmd_demo(args):
    from opie.bot import democloud
    try:
        cloud = democloud.load()
    except democloud.Unavailable as exc:
        raise InputError('opie-bot demo: %s' % exc) from None
    from opie.bot.democloud import demo
    return demo.run(cloud, args)


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


JOURNAL_DIR = 'opie-bot-jobs'


def _positive(text):
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise argparse.ArgumentTypeError('%r is not a positive number'
                                         % text)
    return value


def _cloud_options(parser):
    group = parser.add_argument_group('openstack backend')
    group.add_argument('--os-cloud', metavar='NAME',
                       help='cloud of clouds.yaml (default: $OS_CLOUD, '
                       'else the OS_* variables)')
    group.add_argument('--image', default='cirros',
                       help='image name or id with python3 and cloud-init')
    group.add_argument('--network', default='auto',
                       help='network id, auto or none')
    group.add_argument('--store', default='swift',
                       help='swift, or file:///PATH shared with the servers')
    group.add_argument('--speed', type=_positive, default=1.0,
                       help='job seconds per wall second (demo clouds)')
    group.add_argument('--poll', type=_positive, default=5.0,
                       metavar='SECONDS', help='wall seconds between polls')
    group.add_argument('--agent-poll', type=_positive, default=5.0,
                       metavar='SECONDS')
    group.add_argument('--retries', type=int, default=0,
                       help='reruns of a task whose command fails')
    group.add_argument('--journal-dir', default=JOURNAL_DIR)


def parser():
    p = argparse.ArgumentParser(prog='opie-bot', description=__doc__)
    sub = p.add_subparsers(dest='command', required=True)

    sp = sub.add_parser('plan', help='Dspot, primary map, expected cost')
    sp.add_argument('job')
    sp.set_defaults(func=cmd_plan)

    sp = sub.add_parser('run', help='run a job, with progress and a report')
    sp.add_argument('job')
    sp.add_argument('--backend', choices=['sim', 'openstack'],
                    default='sim')
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
    _cloud_options(sp)
    sp.set_defaults(func=cmd_run)

    for name, func, text in (
            ('resume', cmd_resume, 'continue a job whose client died'),
            ('status', cmd_status, 'where a job on a cloud stands'),
            ('cancel', cmd_cancel, "delete a job's servers and objects")):
        sp = sub.add_parser(name, help=text)
        sp.add_argument('job_id')
        sp.add_argument('--journal-dir', default=JOURNAL_DIR)
        sp.add_argument('--os-cloud', metavar='NAME',
                        help='override the cloud the job was started on')
        sp.add_argument('--report-dir', default='opie-bot-reports')
        sp.add_argument('--progress-every', type=float, default=120.0,
                        metavar='SECONDS')
        sp.add_argument('--quiet', action='store_true')
        sp.set_defaults(func=func)

    sp = sub.add_parser('demo', help='a job on an in-process OpenStack '
                        'cloud with the OPIE scheduler, preempted')
    sp.add_argument('--speed', type=float, default=30.0,
                    help='job seconds per wall second')
    sp.add_argument('--workdir', help='keep the demo\'s files here')
    sp.set_defaults(func=cmd_demo)

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


if __name__ == '__main__':
    sys.exit(main())
