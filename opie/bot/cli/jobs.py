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

"""The commands on a job already started: ``status``, ``list``,
``cancel``, ``watch``, ``logs`` and ``outputs``."""
import os
import sys
import time

from opie import arguments
from opie import oneline
from opie.bot.state import datadir
from opie.bot.job import model
from opie.bot.job import units
from opie.bot.report import watch
from opie.bot.cli import common
from opie.bot.cli import options


def cmd_status(args):
    common.check_dirs(args)

    def status(live, args):
        st = _read_status(args)
        if args.format == 'json':
            common.print_json(st)
            return 0
        _status_lines(st)
        return 0
    return common.cloud_command(status, args)


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
        units.fmt_time(st['elapsed_s']), units.fmt_time(st['deadline_s']),
        'n/a' if st['eta_s'] is None else '%s (%s)' % (
            units.fmt_time(st['eta_s']),
            'met' if st['eta_s'] <= st['deadline_s'] else 'LATE')))
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
    common.check_dirs(args)

    def list_(live, args):
        from opie.bot import controller
        found = controller.jobs(datadir.jobs(args.data_dir),
                                datadir.reports(args.data_dir))
        if args.format == 'json':
            common.print_json(found)
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
    return common.cloud_command(list_, args)


def cmd_cancel(args):
    common.check_dirs(args)

    def cancel(live, args):
        from opie.bot import controller
        controller.cancel(datadir.jobs(args.data_dir), args.job_id,
                          args.os_cloud, common.say(args))
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
            return common.EXIT_MISSED
        print('%s: its servers are deleted; %s' % (head, objects))
        return 0
    return common.cloud_command(cancel, args)


def cmd_logs(args):
    common.check_dirs(args)

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
    return common.cloud_command(logs, args)


def cmd_outputs(args):
    common.check_dirs(args)

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
            raise common.InputError(*(
                'job %s: task %s: outputs refused: %s' % (
                    args.job_id, task, why)
                for task, why in sorted(refused.items())))
        return 0
    return common.cloud_command(fetch, args)


def cmd_watch(args):
    common.check_dirs(args)

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
            else common.EXIT_MISSED
    return common.cloud_command(follow, args)


def add_watch(sub):
    sp = sub.add_parser('watch', help="a job's status until it ends")
    sp.add_argument('job_id')
    sp.add_argument('--interval', type=options.INTERVAL,
                    default=watch.DEFAULT_INTERVAL, metavar='SECONDS',
                    help='wall seconds between looks (default %g)'
                    % watch.DEFAULT_INTERVAL)
    sp.add_argument('--count', type=options.ONE_OR_MORE, metavar='N',
                    help='stop after N looks')
    options.add_data_dir(sp)
    sp.set_defaults(func=cmd_watch)


def add_logs(sub):
    sp = sub.add_parser('logs', help="a task's whole output, so far")
    sp.add_argument('job_id')
    sp.add_argument('task_id')
    sp.add_argument('--tail',
                    type=arguments.whole_number(0, options.MAX_OPTION),
                    metavar='N', help='only the last N lines')
    options.add_job_cloud(sp)
    options.add_data_dir(sp)
    sp.set_defaults(func=cmd_logs)
