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

"""``opie-bot``: plan, run or simulate a Bag-of-Tasks job.

``run`` uses the simulated cloud unless ``--backend openstack``; a job on
a cloud has a journal in the user's data directory (``--data-dir``, else
``$OPIE_BOT_DATA``, else ``~/.local/share/opie-bot``), so ``resume``,
``status`` and ``cancel`` take its id and ``list`` shows them all;
``watch`` follows its status, ``logs`` shows a task's whole output,
``outputs`` fetches the tasks' outputs (again) into the data directory.
``demo`` runs a job on an in-process OpenStack cloud.

Exit codes: 0 done (deadline met), 1 deadline missed (or not finished),
2 bad input (job file, trace, options, journal), 3 the cloud refused or
lacks something (credentials, endpoint, flavor, image, store), reported
in one line per problem, never as a traceback.
"""
import contextlib
import json
import os
import sys
import time

from opie.core import contract
from opie import arguments
from opie import oneline
from opie.bot.state import datadir
from opie.bot.report import html_page
from opie.bot.hads import job_map
from opie.bot.job import jobfile
from opie.bot.state import journal as journal_mod
from opie.bot.sim import map_choice
from opie.bot.job import model
from opie.bot.state import paths
from opie.bot.report import report
from opie.bot.sim import scenarios
from opie.bot.job import schema
from opie.bot.report import stats
from opie.bot.job import units
from opie.bot.report import watch
from opie.bot.sim import backend
from opie.bot.sim import preemption

EXIT_MISSED = 1
EXIT_INPUT = 2
EXIT_CLOUD = 3


class InputError(Exception):
    """Bad input the user can fix: one line per problem, each saying what
    and where."""

    def __init__(self, *problems):
        super().__init__(*problems)
        self.problems = problems


def _load_plan(args):
    try:
        job = jobfile.load(args.job)
    except jobfile.JobFileError as exc:
        raise InputError(*exc.problems) from None
    if getattr(args, 'max_normal', None) is not None and \
            args.normal_limit is None:
        raise InputError('--max-normal needs --normal-limit')
    try:
        plan = map_choice.primary_map(job)
        if getattr(args, 'normal_limit', None) is not None:
            plan = map_choice.under_limits(
                plan, args.normal_limit,
                args.max_normal or job.policy.max_normal)
    except job_map.MapError as exc:
        raise InputError('%s: %s' % (args.job, exc)) from None
    return plan


_fmt_time = units.fmt_time


def _percent(fraction):
    """A saving; none is defined when the baseline costs nothing."""
    return 'n/a' if fraction is None else '%.1f %%' % (100 * fraction)


def cmd_plan(args):
    if args.backend == 'openstack':
        return _cloud_command(_plan_openstack, args)
    if args.os_cloud is not None:
        raise InputError('opie-bot plan: --os-cloud needs --backend '
                         'openstack (without it the plan shows no '
                         'interruption rates)')
    return _show_plan(args, _load_plan(args))


def _plan_openstack(live, args):
    plan = _load_plan(args)
    rates = live.interruption_rates(_settings(live, args),
                                    sorted(plan.job.flavors))
    return _show_plan(args, plan, {
        name: dict(found, expected_preemptions=_expected_preemptions(
            plan, name, found)) for name, found in rates.items()})


DAY_S = 86400.0


def _expected_preemptions(plan, name, rates):
    """Preemptions the plan's preemptible servers of flavor ``name`` can
    expect over their planned lives: the cloud's rate of the last week
    (of the last day when the week has none) times their server-days;
    None without a rate."""
    rate = rates['7d'] if rates['7d'] is not None else rates['1d']
    if rate is None:
        return None
    return rate * sum(s.finish for s in plan.servers
                      if s.market == model.PREEMPTIBLE
                      and s.flavor.name == name) / DAY_S


def _show_plan(args, plan, rates=None):
    """The plan, as text or JSON; ``rates``: each job flavor's published
    interruption rates and expected preemptions, on a cloud."""
    base = job_map.normal_only(plan)
    job = plan.job
    if _json(args):
        shown = _plan_dict(plan, base)
        if rates is not None:
            shown['interruption_rates'] = rates
        _print_json(shown)
        return 0
    print('job %s: %d tasks, deadline %s, Dspot %s (%s)'
          % (job.name, len(job.tasks), _fmt_time(job.deadline_s),
             _fmt_time(plan.dspot), job.policy.dspot))
    for s in plan.servers:
        print('  %-5s %-10s %-11s %3d tasks, ends %s, $%.4f'
              % (s.key, s.flavor.name, s.market, len(s.tasks),
                 _fmt_time(s.finish), s.expected_cost))
    print('%d preemptible and %d normal servers; expected makespan %s, '
          'cost $%.4f; normal-only $%.4f (saving %s)'
          % (plan.count(model.PREEMPTIBLE), plan.count(model.NORMAL),
             _fmt_time(plan.makespan), plan.expected_cost,
             base.expected_cost,
             _percent(1 - plan.expected_cost / base.expected_cost
                      if base.expected_cost and job_map.within_limits(base)
                      else None)))
    for name, found in sorted((rates or {}).items()):
        expected = found['expected_preemptions']
        print('rates: %s %s/server-day over the last day, %s over the last '
              'week: %s' % (
                  name + contract.NAME_SUFFIX, _rate(found['1d']),
                  _rate(found['7d']),
                  'expected preemptions unknown' if expected is None
                  else '%.2f expected preemptions' % expected))
    for risk in plan.risks:
        print('risk: %s' % risk)
    return 0


def _rate(rate):
    return 'unknown' if rate is None else '%g' % rate


def _plan_dict(plan, base):
    """``plan -f json``: the figures of the text output."""
    return {
        'job': plan.job.name, 'tasks': len(plan.job.tasks),
        'deadline_s': plan.job.deadline_s, 'dspot_s': plan.dspot,
        'servers': [{'key': s.key, 'flavor': s.flavor.name,
                     'market': s.market, 'tasks': len(s.tasks),
                     'finish_s': s.finish, 'expected_cost': s.expected_cost}
                    for s in plan.servers],
        'expected_makespan_s': plan.makespan,
        'expected_cost': plan.expected_cost,
        'baseline_cost': base.expected_cost,
        'baseline_within_limits': job_map.within_limits(base),
        'risks': list(plan.risks)}


def _json(args):
    return getattr(args, 'format', 'text') == 'json'


def _say(args):
    """Where a command's informational lines go: stderr when stdout
    carries JSON, which must stay one document."""
    stream = sys.stderr if _json(args) else sys.stdout
    return lambda text: print(text, file=stream, flush=True)


def _progress(args):
    return None if args.quiet or _json(args) else _progress_line


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


def _summary(args, job, rep, stem, simulated=False):
    """The end of a run, as text or JSON; the exit status."""
    res = rep['result']
    code = 0 if res['deadline_met'] else EXIT_MISSED
    if _json(args):
        _print_json({'job': job.name, 'simulated': simulated,
                     'result': res, 'counts': rep['counts'],
                     'misses': rep['misses'], 'report': stem + '.json',
                     'html': stem + '.html'})
        return code
    print('%s%s: makespan %s (deadline %s, %s), cost $%.4f vs normal-only '
          '$%.4f (saving %s)' % (
              'simulated cloud: ' if simulated else '',
              job.name, 'n/a' if res['makespan_s'] is None
              else _fmt_time(res['makespan_s']), _fmt_time(job.deadline_s),
              'met' if res['deadline_met'] else 'MISSED', res['cost'],
              res['baseline_cost'], _percent(res['saving'])))
    for note in rep['misses']:
        print('miss: %s' % note)
    print('report: %s.json, %s.html' % (stem, stem))
    return code


def cmd_run(args):
    _check_dirs(args)
    if args.backend == 'openstack':
        if args.notice is not None:
            raise InputError('opie-bot run: --notice is for the simulated '
                             'cloud; on a real one each server\'s notice is '
                             'read from its metadata key opie:preempt_at')
        _check_store(args.store)
        return _cloud_command(_run_openstack, args)
    given = [option for option, dest in CLOUD_OPTIONS
             if getattr(args, dest) is not None]
    if given:
        raise InputError('opie-bot run: %s %s --backend openstack '
                         '(without it the job is simulated)'
                         % (', '.join(given),
                            'needs' if len(given) == 1 else 'need'))
    plan = _load_plan(args)
    job = plan.job
    kwargs = _preemption_args(args, job)
    stem = _report_stem(_report_dir(args), '%s-%s-seed%d' % (
        job.name, args.scenario or 'run', args.seed))
    result = backend.run(plan, seed=args.seed, mode=args.mode,
                         notice_s=args.notice or 0.0,
                         progress=_progress(args),
                         progress_every=args.progress_every, **kwargs)
    rep = report.build(result, report.baseline(plan, backend.run))
    _write_report(rep, stem)
    return _summary(args, job, rep, stem, simulated=True)


def _report_dir(args):
    return args.report_dir or datadir.reports(args.data_dir)


def _check_dirs(args):
    """The directories a command writes or reads can be used, or one
    line naming the option: checked before any work starts."""
    paths.check_directory('--data-dir', args.data_dir)
    if getattr(args, 'report_dir', None):
        paths.check_directory('--report-dir', args.report_dir)


def _check_store(url):
    """A store URL the client can use, before it plans or connects."""
    if url is None:
        return
    from opie.bot.openstack import stores
    try:
        stores.file_root(url)
    except stores.StoreError as exc:
        raise InputError(str(exc)) from None


def _report_stem(directory, name):
    """DIRECTORY/NAME, whose .json and .html may be written (not links,
    not directories): checked before the run, so that a run's end is
    never lost to a path."""
    stem = os.path.join(directory, name)
    for suffix in REPORT_SUFFIXES:
        paths.check_file(stem + suffix)
    return stem


def _write_report(rep, stem):
    """Write ``rep`` as STEM.json and STEM.html."""
    try:
        os.makedirs(os.path.dirname(stem), exist_ok=True)
    except OSError as exc:
        raise paths.PathError('%s: %s' % (os.path.dirname(stem),
                                          exc.strerror)) from None
    paths.write_text(stem + '.json', json.dumps(rep, indent=1))
    paths.write_text(stem + '.html', html_page.render(rep))


def _cloud_command(command, args):
    """Run a command that needs the cloud backend; its errors are one
    line (imported here: the sim backend needs no cloud library)."""
    from opie.bot.openstack import live
    try:
        return command(live, args)
    except live.CloudError as exc:
        print('opie-bot: %s' % oneline.escape(str(exc)), file=sys.stderr)
        return EXIT_CLOUD
    except journal_mod.JournalError as exc:
        # Its last record could not be written: the client stops before
        # acting on it.
        print('opie-bot: %s; %s, opie-bot resume (or cancel) JOB_ID once '
              'the journal is back' % (
                  oneline.escape(str(exc)),
                  getattr(exc, 'kept', "the job's servers keep running")),
              file=sys.stderr)
        return EXIT_CLOUD
    except KeyboardInterrupt as exc:
        # The journal has every step: the job is only paused.
        print('opie-bot: interrupted; %s' % (
            exc.args[0] if exc.args else "the job's servers keep running: "
            'opie-bot resume (or cancel) JOB_ID'), file=sys.stderr)
        return EXIT_MISSED
    except ValueError as exc:
        raise InputError(*getattr(exc, 'problems', (str(exc),))) from None


def _settings(live, args):
    given = {field: getattr(args, dest) for field, dest in (
        ('cloud', 'os_cloud'), ('image', 'image'), ('network', 'network'),
        ('store', 'store'), ('speed', 'speed'), ('poll_s', 'poll'),
        ('agent_poll_s', 'agent_poll'), ('retries', 'retries'))
        if getattr(args, dest, None) is not None}
    return live.Settings(**given)


def _drive(live, ctx, args):
    with _kept_on_error(ctx):
        finished = live.loop(ctx, _progress(args),
                             ctx.clock.wall_s(args.progress_every))
    rep = live.build_report(ctx)
    stem = _report_stem(_report_dir(args), ctx.job_id)
    _write_report(rep, stem)
    if ctx.executor.stopped:
        _say(args)('stopped (%s): every server of the job is deleted'
                   % ctx.executor.stopped)
    code = _summary(args, ctx.plan.job, rep, stem)
    if _json(args):
        return code if finished else EXIT_MISSED
    counts = rep['counts']
    print('preemptions %d, migrations %d, checkpoints %d, restores %d, '
          'duplicate runs %d, client resumes %d' % (
              counts['servers_terminated'] + counts['servers_hibernated'],
              counts['migrations'], counts['checkpoints'],
              counts['restores'], counts['duplicate_runs'],
              counts['client_resumes']))
    return code if finished else EXIT_MISSED


@contextlib.contextmanager
def _kept_on_error(ctx):
    """A client that stops on an error it cannot act past (the cloud
    unreachable, the journal unwritable, Ctrl-C) leaves the job's servers
    running for a resume: say how many, and why, on the way out.  Any
    other error is the client's own: every server is deleted first, so
    nothing bills on for a client that cannot go on."""
    try:
        yield
    except KeyboardInterrupt:
        raise KeyboardInterrupt('%s: opie-bot resume (or cancel) %s' % (
            _kept(ctx), ctx.job_id)) from None
    except journal_mod.JournalError as exc:
        exc.kept = _kept(ctx)
        raise
    except _cloud_errors() as exc:
        raise type(exc)('%s (%s)' % (exc, _kept(ctx))) from None
    except Exception as exc:
        raise InputError('opie-bot: job %s stopped on an error (%s); %s'
                         % (ctx.job_id, exc, _stop_after_error(ctx, exc))) \
            from None


def _stop_after_error(ctx, exc):
    """Delete every server of a client that cannot go on; what became
    of them, for its one line.  If even that fails (the error may be the
    cloud's), they are left for ``resume`` or ``cancel``, and said so."""
    try:
        deleted = ctx.executor.stop('client error: %s' % exc)
        ctx.journal.set_meta(status='stopped')
    except Exception as again:
        return '%s kept running (deleting them failed: %s)' % (
            _servers(len(ctx.executor.fleet.live())), again)
    return '%s deleted' % _servers(deleted)


def _kept(ctx):
    """What a client leaves running as it stops, for its one line."""
    count = len(ctx.executor.fleet.live())
    return "the job's %s %s running" % (_servers(count), 'keeps'
                                        if count == 1 else 'keep')


def _cloud_errors():
    from opie.bot.openstack import live
    return (live.CloudError,)


def _servers(count):
    return '%d server%s' % (count, '' if count == 1 else 's')


def _run_openstack(live, args):
    plan = _load_plan(args)
    if args.controller:
        from opie.bot import controller
        controller.launch(plan, args.job, _settings(live, args),
                          datadir.jobs(args.data_dir), args.controller_flavor,
                          _say(args))
        return 0
    if args.controller_flavor:
        raise InputError('opie-bot run: --controller-flavor needs '
                         '--controller')
    ctx = live.start(plan, args.job, _settings(live, args),
                     datadir.jobs(args.data_dir), _say(args))
    return _drive(live, ctx, args)


def cmd_resume(args):
    _check_dirs(args)

    def resume(live, args):
        from opie.bot import controller
        controller.take_back(datadir.jobs(args.data_dir), args.job_id,
                             args.os_cloud)
        ctx = live.resume(datadir.jobs(args.data_dir), args.job_id,
                          args.os_cloud)
        _say(args)('job %s resumed' % ctx.job_id)
        return _drive(live, ctx, args)
    return _cloud_command(resume, args)


def cmd_status(args):
    _check_dirs(args)

    def status(live, args):
        st = _read_status(args)
        if args.format == 'json':
            _print_json(st)
            return 0
        _status_lines(st)
        return 0
    return _cloud_command(status, args)


def _read_status(args):
    """The job's status, with its controller's view (whose records
    :func:`controller.status` copies first) for a job that has one."""
    from opie.bot import controller
    return controller.status(datadir.jobs(args.data_dir), args.job_id,
                             datadir.reports(args.data_dir))


def _status_lines(st):
    """The status a tenant reads at a glance: time, tasks, servers,
    cost, and the controller of a job that has one."""
    by = st['tasks_by_state']
    print('job %s: %s' % (st['job_id'], _state(st)))
    print('time: elapsed %s, deadline %s, ETA %s' % (
        _fmt_time(st['elapsed_s']), _fmt_time(st['deadline_s']),
        'n/a' if st['eta_s'] is None else '%s (%s)' % (
            _fmt_time(st['eta_s']), 'met' if st['eta_s'] <= st['deadline_s']
            else 'LATE')))
    print('tasks: %d: queued %d, running %d, done %d, failed %d' % (
        st['tasks'], by['queued'], by['running'], by['done'],
        by['failed']))
    print('live servers: %d preemptible, %d normal; preemptions %d, boot '
          'failures %d, migrations %d, duplicate runs %d' % (
              st['servers'][model.PREEMPTIBLE], st['servers'][model.NORMAL],
              st['preemptions'], st['boot_failures'], st['migrations'],
              st['duplicate_runs']))
    print('cost so far: $%.4f (normal-only plan $%.4f)' % (
        st['cost'], st['baseline_cost']))
    if 'controller' in st:
        from opie.bot import controller
        print(controller.describe(st['job_id'], st['controller']))


def _state(st):
    if st['status'] == 'paused':
        return 'paused (no client drives it: opie-bot resume %s)' \
            % st['job_id']
    return st['status']


def cmd_list(args):
    _check_dirs(args)

    def list_(live, args):
        from opie.bot import controller
        found = controller.jobs(datadir.jobs(args.data_dir),
                                datadir.reports(args.data_dir))
        if args.format == 'json':
            _print_json(found)
            return 0
        if not found:
            print('no jobs in %s' % datadir.jobs(args.data_dir))
            return 0
        print('%-28s %-9s %9s  %s' % ('JOB', 'STATUS', 'TASKS', 'STARTED'))
        for st in found:
            print('%-28s %-9s %9s  %s' % (
                st['job_id'], st['status'],
                '%d/%d' % (st['done'], st['tasks']),
                time.strftime('%Y-%m-%d %H:%M',
                              time.localtime(st['started'] or 0))))
        return 0
    return _cloud_command(list_, args)


def _print_json(value):
    print(json.dumps(value, indent=1, sort_keys=True))


def cmd_cancel(args):
    _check_dirs(args)

    def cancel(live, args):
        from opie.bot import controller
        controller.cancel(datadir.jobs(args.data_dir), args.job_id,
                          args.os_cloud, _say(args))
        kept, state = live.cancel(datadir.jobs(args.data_dir), args.job_id,
                                  args.os_cloud, args.delete_results)
        objects = ('its objects are deleted, results too'
                   if args.delete_results else
                   'its results are kept (opie-bot cancel %s '
                   '--delete-results deletes them)' % args.job_id)
        head = ('job %s was done: its leftovers are deleted'
                if state == 'done' else 'job %s cancelled') % args.job_id
        if kept:
            message = ('%s, but %d of its servers were left alone because '
                       'their job tag was removed: %s; %s' % (
                           head, len(kept), ', '.join(kept), objects))
            print(oneline.escape(message), file=sys.stderr)
            return EXIT_MISSED
        print('%s: its servers are deleted; %s' % (head, objects))
        return 0
    return _cloud_command(cancel, args)


def cmd_logs(args):
    _check_dirs(args)

    def logs(live, args):
        pieces = live.task_log(datadir.jobs(args.data_dir), args.job_id,
                               args.task_id, args.tail, args.os_cloud)
        if pieces is None:
            print('task %s of job %s has no output yet' % (
                oneline.escape(args.task_id), args.job_id), file=sys.stderr)
            return 0
        out = sys.stdout.buffer
        for piece in pieces:
            out.write(piece)
        out.flush()
        return 0
    return _cloud_command(logs, args)


def cmd_outputs(args):
    _check_dirs(args)

    def fetch(live, args):
        fetched, refused = live.fetch_outputs(
            datadir.jobs(args.data_dir), args.job_id, args.os_cloud)
        if fetched:
            skipped = sum(s for _, s in fetched.values())
            print('job %s: %d output file(s) of %d committed task(s) in %s%s'
                  % (args.job_id, sum(f for f, _ in fetched.values()),
                     len(fetched), os.path.join(
                         args.data_dir, datadir.outputs(args.job_id, '')),
                     '; %d file(s) the agents skipped' % skipped
                     if skipped else ''))
        elif not refused:
            print('job %s: no task has committed a result yet'
                  % args.job_id)
        if refused:
            raise InputError(*('job %s: task %s: outputs refused: %s' % (
                args.job_id, task, why)
                for task, why in sorted(refused.items())))
        return 0
    return _cloud_command(fetch, args)


def cmd_watch(args):
    _check_dirs(args)

    def show(st):
        if sys.stdout.isatty():
            # Each look replaces the last, as watch(1) does.
            sys.stdout.write('\x1b[H\x1b[2J')
        _status_lines(st)
        sys.stdout.flush()

    def follow(live, args):
        try:
            st = watch.follow(lambda: _read_status(args), show,
                              args.interval, args.count)
        except KeyboardInterrupt:
            # Watching changes nothing: stopping it is no failure.
            return 0
        return 0 if st['status'] in ('running', 'paused', 'done') \
            else EXIT_MISSED
    return _cloud_command(follow, args)


def _watch_parser(sub):
    sp = sub.add_parser('watch', help="a job's status until it ends")
    sp.add_argument('job_id')
    sp.add_argument('--interval', type=INTERVAL,
                    default=watch.DEFAULT_INTERVAL, metavar='SECONDS',
                    help='wall seconds between looks (default %g)'
                    % watch.DEFAULT_INTERVAL)
    sp.add_argument('--count', type=ONE_OR_MORE, metavar='N',
                    help='stop after N looks')
    _data_dir_option(sp)
    sp.set_defaults(func=cmd_watch)


def _logs_parser(sub):
    sp = sub.add_parser('logs', help="a task's whole output, so far")
    sp.add_argument('job_id')
    sp.add_argument('task_id')
    sp.add_argument('--tail', type=arguments.whole_number(0, MAX_OPTION),
                    metavar='N', help='only the last N lines')
    _job_cloud_option(sp)
    _data_dir_option(sp)
    sp.set_defaults(func=cmd_logs)


def cmd_demo(args):
    # The demo cloud is Nova's test harness, which opie-bot neither needs
    # nor installs: this is the only place opie.bot names opie.testing,
    # and only when the demo runs.
    from opie.testing import democloud
    try:
        cloud = democloud.load()
    except democloud.Unavailable as exc:
        raise InputError('opie-bot demo: %s' % exc) from None
    from opie.testing.democloud import demo
    return demo.run(cloud, args)


def cmd_sim(args):
    try:
        chosen = scenarios.parse_list(args.scenarios)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    plan = _load_plan(args)

    notice = args.notice or 0.0

    def simulate(p, sc, seed):
        return backend.run(p, kh=sc.kh, kr=sc.kr, seed=seed, mode=args.mode,
                           notice_s=notice)

    cells = stats.run_cells(plan, chosen, args.seeds, simulate)
    base = report.baseline(plan, backend.run)['cost']
    # Asked for a notice, even of 0, the table shows the work lost.
    header, body = stats.rows(cells, base, lost=args.notice is not None)
    code = EXIT_MISSED if any(c.misses for c in cells) else 0
    if _json(args):
        _print_json({'job': plan.job.name, 'mode': args.mode,
                     'notice_s': notice,
                     'seeds': args.seeds, 'baseline_cost': base,
                     'rows': [dict(zip(header, row)) for row in body]})
        return code
    print('%s, %s mode%s, %d seeds; normal-only baseline $%.3f; mean '
          '[P10-P90]' % (plan.job.name, args.mode,
                         '' if args.notice is None
                         else ', notice %g s' % notice, args.seeds, base))
    print(stats.text_table(header, body))
    return code


def _notice_option(parser):
    parser.add_argument('--notice', type=NON_NEGATIVE, metavar='SECONDS',
                        help='simulated cloud: announce each preemption '
                        'this long before it comes (default 0: no notice); '
                        'sim also shows the work lost.  A real cloud gives '
                        'its own (opie:preempt_at)')


def _limit_options(parser):
    parser.add_argument('--normal-limit', type=COUNT, metavar='N',
                        help='replace every flavor\'s normal limit')
    parser.add_argument('--max-normal', type=ONE_OR_MORE, metavar='N',
                        help='with --normal-limit: the total normal limit')


REPORT_SUFFIXES = ('.json', '.html')
# Far beyond any sensible poll interval, speed or expected preemptions.
MAX_OPTION = 1e6
POSITIVE = arguments.finite_number(0, MAX_OPTION, minimum_included=False)
NON_NEGATIVE = arguments.finite_number(0, MAX_OPTION)
# At least a second: a job of 30 days then prints 2.6 million lines at
# most, not an endless stream.
INTERVAL = arguments.finite_number(1, MAX_OPTION)
COUNT = arguments.whole_number(0, schema.MAX_COUNT)
ONE_OR_MORE = arguments.whole_number(1, schema.MAX_COUNT)
# run's options of the openstack backend: (option, attribute).
CLOUD_OPTIONS = (('--os-cloud', 'os_cloud'), ('--image', 'image'),
                 ('--network', 'network'), ('--store', 'store'),
                 ('--speed', 'speed'), ('--poll', 'poll'),
                 ('--agent-poll', 'agent_poll'), ('--retries', 'retries'),
                 ('--controller', 'controller'),
                 ('--controller-flavor', 'controller_flavor'))


def _cloud_options(parser):
    # No defaults here: an option given without --backend openstack is
    # an error, and live.Settings holds the defaults.
    group = parser.add_argument_group('openstack backend')
    arguments.add_os_cloud(group)
    group.add_argument('--image',
                       help='image name or id with python3 and cloud-init '
                       '(default cirros)')
    group.add_argument('--network', help='network id, auto (default) or '
                       'none')
    group.add_argument('--store',
                       help='swift (default), or file:///PATH shared with '
                       'the servers')
    group.add_argument('--speed', type=POSITIVE,
                       help='job seconds per wall second (demo clouds; '
                       'default 1)')
    group.add_argument('--poll', type=POSITIVE, metavar='SECONDS',
                       help='wall seconds between polls (default 5)')
    group.add_argument('--agent-poll', type=POSITIVE, metavar='SECONDS',
                       help='wall seconds between agent polls (default 5)')
    group.add_argument('--retries', type=COUNT,
                       help='reruns of a task whose command fails '
                       '(default 0)')
    group.add_argument('--controller', action='store_const', const=True,
                       help='run the client on a normal server of the '
                       'project, so the job goes on with this machine off')
    group.add_argument('--controller-flavor', metavar='FLAVOR',
                       help="the controller's normal flavor (default: the "
                       "job's smallest)")


def _job_cloud_option(parser):
    # resume, cancel, logs and outputs: the job's journal names its cloud.
    arguments.add_os_cloud(parser, help='override the cloud the job was '
                           'started on')


def _data_dir_option(parser):
    parser.add_argument('--data-dir', default=datadir.default(),
                        metavar='DIR',
                        help='where jobs and reports are kept (default: '
                        '$%s, else ~/.local/share/opie-bot)' % datadir.ENV)


def _format_option(parser):
    parser.add_argument('-f', '--format', choices=['text', 'json'],
                        default='text')


def parser():
    p = oneline.ArgumentParser(prog='opie-bot', description=__doc__)
    sub = p.add_subparsers(dest='command', required=True)

    sp = sub.add_parser('plan', help='Dspot, primary map, expected cost')
    sp.add_argument('job')
    sp.add_argument('--backend', choices=['sim', 'openstack'],
                    default='sim',
                    help='openstack: also show and use the interruption '
                    "rates the cloud publishes on the job's preemptible "
                    'flavors')
    arguments.add_os_cloud(sp)
    _format_option(sp)
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
    sp.add_argument('--kh', type=NON_NEGATIVE, default=0.0,
                    help='expected preemptions per flavor over D')
    sp.add_argument('--kr', type=NON_NEGATIVE, default=0.0,
                    help='expected resumes per flavor over D')
    sp.add_argument('--seed', type=arguments.whole_number(), default=0)
    sp.add_argument('--mode', choices=preemption.MODES,
                    default=preemption.HIBERNATE)
    _notice_option(sp)
    sp.add_argument('--report-dir', metavar='DIR',
                    help='where the report goes (default: DATA_DIR/reports)')
    sp.add_argument('--progress-every', type=INTERVAL, default=120.0,
                    metavar='SECONDS', help='simulated seconds per line')
    sp.add_argument('--quiet', action='store_true')
    _format_option(sp)
    _limit_options(sp)
    _cloud_options(sp)
    _data_dir_option(sp)
    sp.set_defaults(func=cmd_run)

    for name, func, text in (
            ('resume', cmd_resume, 'continue a job whose client died'),
            ('status', cmd_status, 'where a job on a cloud stands'),
            ('cancel', cmd_cancel, "delete a job's servers (and objects "
             "but its results)")):
        sp = sub.add_parser(name, help=text)
        sp.add_argument('job_id')
        _data_dir_option(sp)
        if name in ('status', 'resume'):
            _format_option(sp)
        if name != 'status':
            _job_cloud_option(sp)
        if name == 'cancel':
            sp.add_argument('--delete-results', action='store_true',
                            help='delete the committed results too '
                            '(kept by default)')
        if name == 'resume':
            sp.add_argument('--report-dir', metavar='DIR',
                            help='where the report goes (default: '
                            'DATA_DIR/reports)')
            sp.add_argument('--progress-every', type=INTERVAL,
                            default=120.0, metavar='SECONDS')
            sp.add_argument('--quiet', action='store_true')
        sp.set_defaults(func=func)

    _watch_parser(sub)
    _logs_parser(sub)

    sp = sub.add_parser('outputs', help="fetch the tasks' outputs (again) "
                        'into the data directory')
    sp.add_argument('job_id')
    _job_cloud_option(sp)
    _data_dir_option(sp)
    sp.set_defaults(func=cmd_outputs)

    sp = sub.add_parser('list', help='the jobs of the data directory')
    _data_dir_option(sp)
    _format_option(sp)
    sp.set_defaults(func=cmd_list)

    sp = sub.add_parser('demo', help='a job on an in-process OpenStack '
                        'cloud with the OPIE scheduler, preempted')
    sp.add_argument('--speed', type=POSITIVE, default=30.0,
                    help='job seconds per wall second')
    sp.add_argument('--workdir', help='keep the demo\'s files here')
    sp.set_defaults(func=cmd_demo)

    sp = sub.add_parser('sim', help='statistics over scenarios and seeds')
    sp.add_argument('job')
    sp.add_argument('--scenarios', default='sc1..sc7')
    sp.add_argument('--seeds', type=ONE_OR_MORE, default=10)
    sp.add_argument('--mode', choices=preemption.MODES,
                    default=preemption.HIBERNATE)
    _notice_option(sp)
    _format_option(sp)
    _limit_options(sp)
    sp.set_defaults(func=cmd_sim)
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except InputError as exc:
        for problem in exc.problems:
            print(oneline.escape(problem), file=sys.stderr)
        return EXIT_INPUT
    except paths.PathError as exc:
        print(oneline.escape(str(exc)), file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:
        # The reader (``| head``) has all it wanted: stop quietly, and
        # keep the interpreter from complaining as it flushes stdout.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == '__main__':
    sys.exit(main())
