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

"""``opie-bot run`` and ``resume``: a job driven to its end, on the
simulated cloud or a real one."""
import contextlib

from opie.bot.state import datadir
from opie.bot.state import journal as journal_mod
from opie.bot.report import report
from opie.bot.sim import scenarios
from opie.bot.sim import backend
from opie.bot.sim import preemption
from opie.bot.cli import common
from opie.bot.cli import options


def _preemption_args(args, job):
    if args.trace:
        try:
            return {'trace': preemption.read_trace(args.trace, job.flavors)}
        except preemption.TraceError as exc:
            raise common.InputError(str(exc)) from None
    if args.scenario:
        sc = scenarios.TABLE8[args.scenario]
        return {'kh': sc.kh, 'kr': sc.kr}
    return {'kh': args.kh, 'kr': args.kr}


def cmd_run(args):
    common.check_dirs(args)
    if args.backend == 'openstack':
        if args.notice is not None:
            raise common.InputError(
                'opie-bot run: --notice is for the simulated cloud; on a '
                'real one each server\'s notice is read from its metadata '
                'key opie:preempt_at')
        _check_store(args.store)
        return common.cloud_command(_run_openstack, args)
    given = [option for option, dest in options.CLOUD_OPTIONS
             if getattr(args, dest) is not None]
    if given:
        raise common.InputError('opie-bot run: %s %s --backend openstack '
                                '(without it the job is simulated)'
                                % (', '.join(given),
                                   'needs' if len(given) == 1 else 'need'))
    plan = common.load_plan(args)
    job = plan.job
    kwargs = _preemption_args(args, job)
    stem = common.report_stem(common.report_dir(args), '%s-%s-seed%d' % (
        job.name, args.scenario or 'run', args.seed))
    result = backend.run(plan, seed=args.seed, mode=args.mode,
                         notice_s=args.notice or 0.0,
                         progress=common.progress(args),
                         progress_every=args.progress_every, **kwargs)
    rep = report.build(result, report.baseline(plan, backend.run))
    common.write_report(rep, stem)
    return common.summary(args, job, rep, stem, simulated=True)


def _check_store(url):
    """A store URL the client can use, before it plans or connects."""
    if url is None:
        return
    from opie.bot.openstack import stores
    try:
        stores.file_root(url)
    except stores.StoreError as exc:
        raise common.InputError(str(exc)) from None


def _drive(live, ctx, args):
    with _kept_on_error(ctx):
        finished = live.loop(ctx, common.progress(args),
                             ctx.clock.wall_s(args.progress_every))
    rep = live.build_report(ctx)
    stem = common.report_stem(common.report_dir(args), ctx.job_id)
    common.write_report(rep, stem)
    if ctx.executor.stopped:
        common.say(args)('stopped (%s): every server of the job is '
                         'deleted' % ctx.executor.stopped)
    code = common.summary(args, ctx.plan.job, rep, stem)
    if common.is_json(args):
        return code if finished else common.EXIT_MISSED
    counts = rep['counts']
    print('preemptions %d, migrations %d, checkpoints %d, restores %d, '
          'duplicate runs %d, client resumes %d' % (
              counts['servers_terminated'] + counts['servers_hibernated'],
              counts['migrations'], counts['checkpoints'],
              counts['restores'], counts['duplicate_runs'],
              counts['client_resumes']))
    return code if finished else common.EXIT_MISSED


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
        raise common.InputError(
            'opie-bot: job %s stopped on an error (%s); %s'
            % (ctx.job_id, exc, _stop_after_error(ctx, exc))) from None


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
    plan = common.load_plan(args)
    if args.controller:
        from opie.bot import controller
        controller.launch(plan, args.job, common.settings(live, args),
                          datadir.jobs(args.data_dir), args.controller_flavor,
                          common.say(args))
        return 0
    if args.controller_flavor:
        raise common.InputError('opie-bot run: --controller-flavor needs '
                                '--controller')
    ctx = live.start(plan, args.job, common.settings(live, args),
                     datadir.jobs(args.data_dir), common.say(args))
    return _drive(live, ctx, args)


def cmd_resume(args):
    common.check_dirs(args)

    def resume(live, args):
        from opie.bot import controller
        controller.take_back(datadir.jobs(args.data_dir), args.job_id,
                             args.os_cloud)
        ctx = live.resume(datadir.jobs(args.data_dir), args.job_id,
                          args.os_cloud)
        common.say(args)('job %s resumed' % ctx.job_id)
        return _drive(live, ctx, args)
    return common.cloud_command(resume, args)
