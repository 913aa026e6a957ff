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

"""``opie-bot status``: where a job on a cloud stands, from its journal.

A tenant asks two things at a glance: will it end in time, and what has
it cost.  So the status is computed at *now* (job time from the
journal's t0 and speed), not at the last record: a paused job's servers
bill on and its clock runs on while no client drives it.  A job that
ended (done, stopped, cancelled) is shown at its end.

Every figure comes from the journal, as the report's do
(:mod:`opie.bot.report.report` bills the servers the same way), except the ETA,
which is an estimate: running tasks end at their journalled estimate,
queued tasks share the slots of the live servers (or of one server of
the fastest flavor if none is live).  Boot failures are counted apart
from preemptions, as in the report.
"""
import collections

from opie.bot.hads import job_map
from opie.bot.sim import map_choice
from opie.bot.job import model
from opie.bot.report import report

QUEUED, RUNNING, DONE, FAILED = 'queued', 'running', 'done', 'failed'
# Events that take a task off the server it ran on, back to the queue.
REQUEUE = ('task_migrate', 'task_steal', 'resume_guard', 'task_hung')


def summarize(job_id, state, started, job, records, now, ended,
              baseline=True):
    """The status dict of job ``job_id`` in lifecycle ``state``; ``now``
    is its job time now, ``ended`` whether it has ended for good;
    ``baseline``: plan the job to cost it on normal servers only (a
    planning of the whole job, which ``list`` spares itself)."""
    count = collections.Counter(r['event'] for r in records)
    at = _end_time(records) if ended else now
    # Servers bill until they end, or until now (or the job's end).
    rows = report.servers(records, max([at] + [r['t'] for r in records]))
    live = [s for s in rows if s['ended'] is None]
    running, over, failed = _tasks(records, {s['server'] for s in live})
    queued = [t for t in job.tasks if t.id not in running and
              t.id not in over]
    boot_failed = report.ends(records, 'server_error') | report.ends(
        records, 'server_boot_failed')
    return {
        'job_id': job_id, 'status': state, 'started': started,
        'deadline_s': job.deadline_s, 'elapsed_s': at,
        'eta_s': _eta(job, state, records, running, queued, live, at),
        'tasks': len(job.tasks),
        'done': len(over - failed), 'failed': len(failed),
        'tasks_by_state': {QUEUED: len(queued), RUNNING: len(running),
                           DONE: len(over - failed), FAILED: len(failed)},
        'servers': {m: sum(1 for s in live if s['market'] == m)
                    for m in model.MARKETS},
        'cost': sum(s['cost'] for s in rows),
        'baseline_cost': job_map.normal_only(
            map_choice.primary_map(job)).expected_cost if baseline else None,
        'boot_failures': len(boot_failed),
        'preemptions': len(report.ends(records, 'server_preempted')
                           - boot_failed) + count['server_hibernated'],
        'migrations': count['task_migrate'],
        'duplicate_runs': count['task_duplicate'],
        'last_event': records[-1]['event'] if records else None,
    }


def _end_time(records):
    """When an ended job ended: its last task, else its last record."""
    for r in records:
        if r['event'] == 'done':
            return r['t']
    return records[-1]['t'] if records else 0.0


def _tasks(records, live):
    """({running task: its estimated end}, tasks over, tasks failed).  A
    task runs from its start until it ends, moves, or its server is lost;
    a task over whose run failed (or hung for good) is failed, not done."""
    where, failed, over = {}, set(), set()
    for r in records:
        ev = r['event']
        if ev == 'task_start':
            where[r['task']] = (r['server'], r['t'] + r['wall'])
        elif ev in REQUEUE:
            where.pop(r['task'], None)
        elif ev == 'task_failed':
            failed.add(r['task'])
        elif ev == 'task_finish':
            over.add(r['task'])
            where.pop(r['task'], None)
    running = {t: end for t, (server, end) in where.items() if server in live}
    return running, over, failed & over


def _eta(job, state, records, running, queued, live, now):
    """When the job should end: its end if done, None if it ended
    otherwise, else the estimate of the module docstring."""
    if state == 'done':
        return next(r['t'] for r in records if r['event'] == 'done')
    if state in ('cancelled', 'stopped'):
        return None
    busy_until = max([now] + list(running.values()))
    if not queued:
        return busy_until
    if live:
        start = now
        slots = sum(job.slots(job.flavors[s['flavor']]) for s in live)
    else:
        start = now + job.policy.alpha_s
        slots = 1
    work = sum(min(t.runtime_s.values()) for t in queued)
    return max(busy_until, start + work / slots)
