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

"""``opie-bot plan``: Dspot, the primary map and its expected cost."""
from opie.core import contract
from opie.bot.hads import job_map
from opie.bot.job import model
from opie.bot.job import units
from opie.bot.cli import common


def cmd_plan(args):
    if args.backend == 'openstack':
        return common.cloud_command(_plan_openstack, args)
    if args.os_cloud is not None:
        raise common.InputError('opie-bot plan: --os-cloud needs '
                                '--backend openstack (without it the plan '
                                'shows no interruption rates)')
    return _show_plan(args, common.load_plan(args))


def _plan_openstack(live, args):
    plan = common.load_plan(args)
    rates = live.interruption_rates(common.settings(live, args),
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
    if common.is_json(args):
        shown = _plan_dict(plan, base)
        if rates is not None:
            shown['interruption_rates'] = rates
        common.print_json(shown)
        return 0
    print('job %s: %d tasks, deadline %s, Dspot %s (%s)'
          % (job.name, len(job.tasks), units.fmt_time(job.deadline_s),
             units.fmt_time(plan.dspot), job.policy.dspot))
    for s in plan.servers:
        print('  %-5s %-10s %-11s %3d tasks, ends %s, $%.4f'
              % (s.key, s.flavor.name, s.market, len(s.tasks),
                 units.fmt_time(s.finish), s.expected_cost))
    print('%d preemptible and %d normal servers; expected makespan %s, '
          'cost $%.4f; normal-only $%.4f (saving %s)'
          % (plan.count(model.PREEMPTIBLE), plan.count(model.NORMAL),
             units.fmt_time(plan.makespan), plan.expected_cost,
             base.expected_cost,
             common.percent(
                 1 - plan.expected_cost / base.expected_cost
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
