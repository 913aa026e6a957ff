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

"""What the commands of ``opie-bot`` share: the exit codes, the input
errors, a plan loaded from a job file, the report written, the cloud
backend's errors in one line."""
import json
import os
import sys

from opie import oneline
from opie.bot.state import datadir
from opie.bot.report import html_page
from opie.bot.hads import job_map
from opie.bot.job import jobfile
from opie.bot.state import journal as journal_mod
from opie.bot.sim import map_choice
from opie.bot.state import paths
from opie.bot.job import units

EXIT_MISSED = 1


EXIT_INPUT = 2


EXIT_CLOUD = 3


class InputError(Exception):
    """Bad input the user can fix: one line per problem, each saying what
    and where."""

    def __init__(self, *problems):
        super().__init__(*problems)
        self.problems = problems


def load_plan(args):
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


def percent(fraction):
    """A saving; none is defined when the baseline costs nothing."""
    return 'n/a' if fraction is None else '%.1f %%' % (100 * fraction)


def is_json(args):
    return getattr(args, 'format', 'text') == 'json'


def say(args):
    """Where a command's informational lines go: stderr when stdout
    carries JSON, which must stay one document."""
    stream = sys.stderr if is_json(args) else sys.stdout
    return lambda text: print(text, file=stream, flush=True)


def progress(args):
    return None if args.quiet or is_json(args) else _progress_line


def _progress_line(snap):
    print('[%6.0f s] done %d/%d  running %d  servers %d (normal %d, '
          'hibernated %d)  cost $%.4f  slack %.0f s'
          % (snap['t'], snap['done'], snap['tasks'], snap['running'],
             snap['servers'], snap['normal'], snap['hibernated'],
             snap['cost'], snap['slack']), flush=True)


def summary(args, job, rep, stem, simulated=False):
    """The end of a run, as text or JSON; the exit status."""
    res = rep['result']
    code = 0 if res['deadline_met'] else EXIT_MISSED
    if is_json(args):
        print_json({'job': job.name, 'simulated': simulated,
                    'result': res, 'counts': rep['counts'],
                    'misses': rep['misses'], 'report': stem + '.json',
                    'html': stem + '.html'})
        return code
    print('%s%s: makespan %s (deadline %s, %s), cost $%.4f vs normal-only '
          '$%.4f (saving %s)' % (
              'simulated cloud: ' if simulated else '',
              job.name, 'n/a' if res['makespan_s'] is None
              else units.fmt_time(res['makespan_s']),
              units.fmt_time(job.deadline_s),
              'met' if res['deadline_met'] else 'MISSED', res['cost'],
              res['baseline_cost'], percent(res['saving'])))
    for note in rep['misses']:
        print('miss: %s' % note)
    print('report: %s.json, %s.html' % (stem, stem))
    return code


def report_dir(args):
    return args.report_dir or datadir.reports(args.data_dir)


def check_dirs(args):
    """The directories a command writes or reads can be used, or one
    line naming the option: checked before any work starts."""
    paths.check_directory('--data-dir', args.data_dir)
    if getattr(args, 'report_dir', None):
        paths.check_directory('--report-dir', args.report_dir)


def report_stem(directory, name):
    """DIRECTORY/NAME, whose .json and .html may be written (not links,
    not directories): checked before the run, so that a run's end is
    never lost to a path."""
    stem = os.path.join(directory, name)
    for suffix in REPORT_SUFFIXES:
        paths.check_file(stem + suffix)
    return stem


def write_report(rep, stem):
    """Write ``rep`` as STEM.json and STEM.html."""
    try:
        os.makedirs(os.path.dirname(stem), exist_ok=True)
    except OSError as exc:
        raise paths.PathError('%s: %s' % (os.path.dirname(stem),
                                          exc.strerror)) from None
    paths.write_text(stem + '.json', json.dumps(rep, indent=1))
    paths.write_text(stem + '.html', html_page.render(rep))


def cloud_command(command, args):
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


def settings(live, args):
    given = {field: getattr(args, dest) for field, dest in (
        ('cloud', 'os_cloud'), ('image', 'image'), ('network', 'network'),
        ('store', 'store'), ('speed', 'speed'), ('poll_s', 'poll'),
        ('agent_poll_s', 'agent_poll'), ('retries', 'retries'))
        if getattr(args, dest, None) is not None}
    return live.Settings(**given)


def print_json(value):
    print(json.dumps(value, indent=1, sort_keys=True))


REPORT_SUFFIXES = ('.json', '.html')
