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

"""The run report: built from the journal alone, checked against the bill.

Every figure comes from the executor's journal (the StateStore), so a
report can be rebuilt from a saved journal.  Billing follows the cloud's
rule: whole seconds, rounded up per server, from the create call to the
delete or the preemption, hibernated time excluded.  ``accounting`` says
whether cost = sum of billed seconds x price, and whether that matches
what the cloud billed.
"""
import math

from opie.bot.hads import job_map
from opie.bot.job import model

_EPS = 1e-9
# The records that end a server's bill: deleted by the client (executor
# or cancel), lost to a preemption, or failed to boot.
SERVER_ENDS = ('server_delete', 'server_preempted', 'server_boot_failed')


def billed_seconds(created, ended, hibernated_s):
    return math.ceil(ended - created - hibernated_s - _EPS)


def servers(records, end_time):
    """Per-server lifecycle and bill, from the journal."""
    out = {}
    for r in records:
        ev = r['event']
        if ev == 'server_create':
            out[r['server']] = {
                'server': r['server'], 'key': r['key'],
                'flavor': r['flavor'], 'market': r['market'],
                'price_h': r['price_h'], 'reason': r['reason'],
                'created': r['t'], 'active': None, 'ended': None,
                'end_reason': None, 'hibernations': []}
            continue
        s = out.get(r.get('server'))
        if s is None:
            continue
        if ev == 'server_active':
            s['active'] = r['t']
        elif ev == 'server_hibernated':
            s['hibernations'].append([r['t'], None])
        elif ev == 'server_resumed':
            s['hibernations'][-1][1] = r['t']
        elif ev in SERVER_ENDS and s['ended'] is None:
            s['ended'] = r['t']
            s['end_reason'] = r.get('reason', 'boot failed' if ev ==
                                    'server_boot_failed' else 'preempted')
    for s in out.values():
        ended = s['ended'] if s['ended'] is not None else end_time
        for span in s['hibernations']:
            if span[1] is None:
                span[1] = ended
        frozen = sum(b - a for a, b in s['hibernations'])
        s['hibernated_s'] = frozen
        s['billed_s'] = billed_seconds(s['created'], ended, frozen)
        s['cost'] = s['billed_s'] * s['price_h'] / 3600.0
    return list(out.values())


def ends(records, event):
    """The servers with an ``event`` record."""
    return {r['server'] for r in records if r['event'] == event}


def segments(records):
    """Task runs on servers: (task, server, start, end, outcome)."""
    open_, out = {}, []
    for r in records:
        ev = r['event']
        if ev == 'task_start':
            open_[r['task']] = (r['server'], r['t'])
        elif ev in ('task_finish', 'task_migrate') and r['task'] in open_:
            server, start = open_[r['task']]
            if ev == 'task_migrate' and r['src'] != server:
                continue
            del open_[r['task']]
            out.append({'task': r['task'], 'server': server, 'start': start,
                        'end': r['t'], 'outcome': 'done'
                        if ev == 'task_finish' else 'moved'})
    return out


def cost_curve(server_rows, end_time, points=200):
    """Cumulative cost at evenly spaced times, for the chart."""
    step = end_time / points if end_time > 0 else 1.0
    curve = []
    for k in range(points + 1):
        t = k * step
        total = 0.0
        for s in server_rows:
            ended = min(t, s['ended'] if s['ended'] is not None
                        else end_time)
            if ended <= s['created']:
                continue
            frozen = sum(max(0.0, min(b, ended) - a)
                         for a, b in s['hibernations'] if a < ended)
            total += (ended - s['created'] - frozen) * s['price_h'] / 3600.0
        curve.append([t, total])
    return curve


def _explain_misses(records, deadline, finish):
    if finish is not None and finish <= deadline:
        return []
    notes = []
    for r in records:
        if r['event'] == 'no_target':
            why = ('limits bound: ' + ', '.join(r['limits'])
                   if r['limits'] else 'no server could end it before D')
            notes.append('t=%.0f s: task %s had no target meeting the '
                         'deadline (%s)' % (r['t'], r['task'], why))
        elif r['event'] == 'take_over':
            notes.append('t=%.0f s: the job was handed to normal servers, '
                         'mapped to end at %.0f s; it ran longer than '
                         'planned' % (r['t'], r['finish']))
        elif r['event'] == 'take_over_lost':
            why = ('limits bound: ' + ', '.join(r['limits'])
                   if r['limits'] else 'no normal server is fast enough')
            notes.append('t=%.0f s: normal servers alone could no longer '
                         'end the job by the deadline (%s)' % (r['t'], why))
        elif r['event'] == 'stopped':
            notes.append('t=%.0f s: the client stopped (%s) and deleted '
                         'the %d servers still live' % (
                             r['t'], r['reason'], r['servers']))
        elif r['event'] == 'stranded':
            notes.append('t=%.0f s: task %s stranded: no server and no '
                         'normal server allowed' % (r['t'], r['task']))
    if finish is None:
        notes.append('the job did not finish')
    elif not notes:
        notes.append('late without a limit binding: a chain of '
                     'preemptions outran the spare-time reserve')
    return notes


def build(result, baseline=None):
    """The report dict of a ``sim.backend.Result``."""
    plan = result.plan
    job = plan.job
    records = result.records
    done = [r['t'] for r in records if r['event'] == 'done']
    finish = done[0] if done else None
    end_time = finish if finish is not None else max(r['t'] for r in records)
    rows = servers(records, end_time)
    cost = sum(s['cost'] for s in rows)
    # A real cloud's bill is not the client's to read: None.
    agree = None
    if result.bill is not None:
        billed = {b['server']: b for b in result.bill}
        agree = all(billed[s['server']]['billed_s'] == s['billed_s']
                    for s in rows) and len(billed) == len(rows)
    count = {}
    for r in records:
        count[r['event']] = count.get(r['event'], 0) + 1
    migrations = {}
    for r in records:
        if r['event'] == 'task_migrate':
            migrations[r['via']] = migrations.get(r['via'], 0) + 1
    base_cost = baseline['cost'] if baseline else None
    # A saving against a baseline the limits forbid would be no saving.
    comparable = bool(base_cost) and baseline.get('within_limits', True)
    report = {
        'job': {'name': job.name, 'tasks': len(job.tasks),
                'deadline_s': job.deadline_s},
        'run': {'mode': result.mode, 'kh': result.kh, 'kr': result.kr,
                'seed': result.seed},
        'plan': {'dspot_s': plan.dspot,
                 'preemptible': plan.mix(model.PREEMPTIBLE),
                 'normal': plan.mix(model.NORMAL),
                 'expected_cost': plan.expected_cost,
                 'expected_makespan_s': plan.makespan,
                 'risks': plan.risks},
        'result': {
            'finished': result.finished,
            'makespan_s': finish,
            'deadline_met': finish is not None and finish <= job.deadline_s,
            'cost': cost,
            'cost_preemptible': sum(s['cost'] for s in rows
                                    if s['market'] == model.PREEMPTIBLE),
            'cost_normal': sum(s['cost'] for s in rows
                               if s['market'] == model.NORMAL),
            'baseline_cost': base_cost,
            'baseline_within_limits': baseline.get('within_limits')
            if baseline else None,
            'saving': (1 - cost / base_cost) if comparable else None,
        },
        'counts': {
            'preemption_events': sum(1 for e in result.preemptions
                                     if e['event'] != 'resume'),
            'servers_hibernated': count.get('server_hibernated', 0),
            # A server that failed to boot (no room) is lost as one that
            # was preempted, but is no preemption (older journals wrote
            # it as server_error, then server_preempted).
            'servers_terminated': len(ends(records, 'server_preempted')
                                      - ends(records, 'server_error')),
            'boot_failures': len(ends(records, 'server_error')
                                 | ends(records, 'server_boot_failed')),
            'resumes_before_mtt': sum(
                1 for r in records if r['event'] == 'server_resumed'
                and r['before_mtt']),
            'resumes_after_mtt': sum(
                1 for r in records if r['event'] == 'server_resumed'
                and not r['before_mtt']),
            'migrations': sum(migrations.values()),
            'migrations_by_target': migrations,
            'work_stealing_calls': count.get('work_stealing', 0),
            'tasks_stolen': count.get('task_steal', 0),
            'checkpoints': result.checkpoints,
            'restores': sum(1 for r in records if r['event'] == 'task_start'
                            and r['saved'] > 0),
            'resume_guard_moves': count.get('resume_guard', 0),
            'notices': count.get('server_notice', 0),
            'work_lost_s': round(sum(r['lost_s'] for r in records
                                     if r['event'] == 'work_lost'), 1),
            'duplicate_runs': count.get('task_duplicate', 0),
            'found_committed': count.get('task_found_committed', 0),
            'failed_tasks': count.get('task_failed', 0),
            'client_resumes': count.get('resume', 0),
            'normal_servers': sum(1 for s in rows
                                  if s['market'] == model.NORMAL),
            'preemptible_servers': sum(1 for s in rows
                                       if s['market'] == model.PREEMPTIBLE),
        },
        'misses': _explain_misses(records, job.deadline_s, finish),
        'accounting': {
            'cost_is_sum_of_billed_seconds_times_price': math.isclose(
                cost, sum(s['billed_s'] * s['price_h'] / 3600.0
                          for s in rows)),
            'matches_cloud_bill': agree,
            'cloud_bill': None if result.bill is None
            else sum(b['cost'] for b in result.bill),
        },
        'preemptions': result.preemptions,
        'servers': rows,
        'segments': segments(records),
        'cost_curve': cost_curve(rows, end_time),
    }
    return report


def baseline(plan, run):
    """Cost and makespan of the normal-only map, simulated by ``run``,
    and whether the job's normal limits allow it (if not, no tenant could
    have paid it, and no saving is claimed against it)."""
    base = job_map.normal_only(plan)
    report = build(run(base))
    return {'cost': report['result']['cost'],
            'makespan_s': report['result']['makespan_s'],
            'within_limits': job_map.within_limits(base)}
