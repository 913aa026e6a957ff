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
import os
import sys

from opie import arguments
from opie import oneline
from opie.bot.state import paths
from opie.bot.sim import scenarios
from opie.bot.sim import preemption
from opie.bot.cli import common
from opie.bot.cli import demo
from opie.bot.cli import jobs
from opie.bot.cli import options
from opie.bot.cli import plan
from opie.bot.cli import run
from opie.bot.cli import simulate


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
    options.add_format(sp)
    sp.set_defaults(func=plan.cmd_plan)

    sp = sub.add_parser('run', help='run a job, with progress and a report')
    sp.add_argument('job')
    sp.add_argument('--backend', choices=['sim', 'openstack'],
                    default='sim')
    group = sp.add_mutually_exclusive_group()
    group.add_argument('--scenario', choices=list(scenarios.TABLE8),
                       help='preemption scenario of HADS Table 8')
    group.add_argument('--trace', metavar='CSV',
                       help='replay preemptions (time_s,flavor,event)')
    sp.add_argument('--kh', type=options.NON_NEGATIVE, default=0.0,
                    help='expected preemptions per flavor over D')
    sp.add_argument('--kr', type=options.NON_NEGATIVE, default=0.0,
                    help='expected resumes per flavor over D')
    sp.add_argument('--seed', type=arguments.whole_number(), default=0)
    sp.add_argument('--mode', choices=preemption.MODES,
                    default=preemption.HIBERNATE)
    options.add_notice(sp)
    sp.add_argument('--report-dir', metavar='DIR',
                    help='where the report goes (default: DATA_DIR/reports)')
    sp.add_argument('--progress-every', type=options.INTERVAL, default=120.0,
                    metavar='SECONDS', help='simulated seconds per line')
    sp.add_argument('--quiet', action='store_true')
    options.add_format(sp)
    options.add_limits(sp)
    options.add_cloud(sp)
    options.add_data_dir(sp)
    sp.set_defaults(func=run.cmd_run)

    for name, func, text in (
            ('resume', run.cmd_resume, 'continue a job whose client died'),
            ('status', jobs.cmd_status, 'where a job on a cloud stands'),
            ('cancel', jobs.cmd_cancel, "delete a job's servers (and objects "
             "but its results)")):
        sp = sub.add_parser(name, help=text)
        sp.add_argument('job_id')
        options.add_data_dir(sp)
        if name in ('status', 'resume'):
            options.add_format(sp)
        if name != 'status':
            options.add_job_cloud(sp)
        if name == 'cancel':
            sp.add_argument('--delete-results', action='store_true',
                            help='delete the committed results too '
                            '(kept by default)')
        if name == 'resume':
            sp.add_argument('--report-dir', metavar='DIR',
                            help='where the report goes (default: '
                            'DATA_DIR/reports)')
            sp.add_argument('--progress-every', type=options.INTERVAL,
                            default=120.0, metavar='SECONDS')
            sp.add_argument('--quiet', action='store_true')
        sp.set_defaults(func=func)

    jobs.add_watch(sub)
    jobs.add_logs(sub)

    sp = sub.add_parser('outputs', help="fetch the tasks' outputs (again) "
                        'into the data directory')
    sp.add_argument('job_id')
    options.add_job_cloud(sp)
    options.add_data_dir(sp)
    sp.set_defaults(func=jobs.cmd_outputs)

    sp = sub.add_parser('list', help='the jobs of the data directory')
    options.add_data_dir(sp)
    options.add_format(sp)
    sp.set_defaults(func=jobs.cmd_list)

    sp = sub.add_parser('demo', help='a job on an in-process OpenStack '
                        'cloud with the OPIE scheduler, preempted')
    sp.add_argument('--speed', type=options.POSITIVE, default=30.0,
                    help='job seconds per wall second')
    sp.add_argument('--workdir', help='keep the demo\'s files here')
    sp.set_defaults(func=demo.cmd_demo)

    sp = sub.add_parser('sim', help='statistics over scenarios and seeds')
    sp.add_argument('job')
    sp.add_argument('--scenarios', default='sc1..sc7')
    sp.add_argument('--seeds', type=options.ONE_OR_MORE, default=10)
    sp.add_argument('--mode', choices=preemption.MODES,
                    default=preemption.HIBERNATE)
    options.add_notice(sp)
    options.add_format(sp)
    options.add_limits(sp)
    sp.set_defaults(func=simulate.cmd_sim)
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except common.InputError as exc:
        for problem in exc.problems:
            print(oneline.escape(problem), file=sys.stderr)
        return common.EXIT_INPUT
    except paths.PathError as exc:
        print(oneline.escape(str(exc)), file=sys.stderr)
        return common.EXIT_INPUT
    except BrokenPipeError:
        # The reader (``| head``) has all it wanted: stop quietly, and
        # keep the interpreter from complaining as it flushes stdout.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
