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

"""Run, resume, inspect or cancel a job on an OpenStack cloud.

One loop, one thread: poll Nova for server changes, poll the agents'
status, run the timers that are due, sleep.  Everything the executor
decides or sees goes to the SQLite journal first
(:mod:`opie.bot.state.journal`), so the client may be killed at any
point: ``resume`` rebuilds the job from the journal, the servers Nova
still has with the job's tag, the agents'
assignments and the committed results, and carries on.  A job's input
files go to its store before its first server is created
(:mod:`opie.bot.state.staging`); the outputs of every task that ends come back
into the data directory (:mod:`opie.bot.state.outputs`).

Errors the user can fix (credentials, endpoint, flavor, image, store) end
the command with one line and exit status 3, the journal untouched.

A poll that fails (the cloud or the store) is tried again at the next
poll.  A local client gives up after :data:`MAX_FAILED_POLLS` in a row:
its user is there to ``resume`` it, and its servers keep running.  A
controller (:mod:`opie.bot.controller`) has nobody to resume it, and
giving up would leave the job's servers billing undriven, so it is
*patient*: it retries until the cloud answers or the job's horizon
comes, waiting the poll interval doubled at each failure up to
:data:`BACKOFF_CAP` intervals (a cloud in trouble is not hammered, and
one that comes back is seen within a few polls), and keeps the last
error and the count in ``Job.failing`` for its heartbeat.
"""
import dataclasses
import os
import secrets
import time

from keystoneauth1 import exceptions as ks_exceptions
from novaclient import exceptions as nova_exceptions

from opie import clouds
from opie.bot.state import datadir
from opie.bot.hads import executor as executor_mod
from opie.bot.job import jobfile
from opie.bot.state import journal as journal_mod
from opie.bot.report import jobstatus
from opie.bot.state import lifecycle
from opie.bot.sim import map_choice
from opie.bot.state import outputs
from opie.bot.report import report
from opie.bot.state import staging
from opie.bot.state import tasklogs
from opie.bot.openstack import errors
from opie.bot.openstack import clock as clock_mod
from opie.bot.openstack import nova
from opie.bot.openstack import runner as runner_mod
from opie.bot.openstack import stores
from opie.bot.sim import backend as sim_backend

CLOUD_ERRORS = (ks_exceptions.ClientException,
                nova_exceptions.ClientException)
# Why a job stops unfinished (the report and status say it).
HORIZON_REASON = sim_backend.HORIZON_REASON
# What the tasks left (results, outputs, logs): what cancel keeps
# unless asked.
KEPT = ('results/', 'outputs/', 'logs/')
# Consecutive failed polls before the client stops (the job can resume).
MAX_FAILED_POLLS = 20
# A patient client's longest wait between failed polls, in poll intervals.
BACKOFF_CAP = 8


class CloudError(Exception):
    """Something the user must fix on the cloud side; one line."""


@dataclasses.dataclass
class Settings:
    cloud: str = None
    image: str = 'cirros'
    network: str = 'auto'
    store: str = 'swift'
    speed: float = 1.0
    poll_s: float = 5.0
    agent_poll_s: float = 5.0
    retries: int = 0


class Job:
    """Everything one run of the client holds."""

    def __init__(self, journal, plan, settings, job_id, t0, conn, inputs,
                 jobs_dir):
        self.journal = journal
        self.plan = plan
        self.settings = settings
        self.job_id = job_id
        self.clock = clock_mod.RealClock(t0, settings.speed)
        try:
            self.store, agent_spec = stores.open_store(
                settings.store, job_id, conn, create=True)
        except stores.StoreError as exc:
            raise CloudError(str(exc)) from None
        if agent_spec.get('temp_url_key'):
            journal.secrets += (agent_spec['temp_url_key'],)

        def user_data(name):
            return runner_mod.user_data({
                'server': name, 'store': agent_spec,
                'speed': settings.speed, 'poll_s': settings.agent_poll_s})

        self.cloud = nova.NovaCloud(
            conn, job_id, settings.image, settings.network, journal,
            self.clock, user_data,
            unshelve_every_s=max(settings.poll_s, 60.0 / settings.speed))
        self.cloud.check(plan.job)
        self.runner = runner_mod.AgentRunner(
            self.store, self.cloud.name_of, journal, self.clock,
            settings.speed, settings.retries)
        self.runner.set_tasks(plan.job, inputs)
        self.cloud.watch(self.runner.server_event)
        self.fetcher = outputs.Fetcher(self.store, journal, self.clock,
                                       datadir.of_jobs(jobs_dir), job_id)
        self.runner.watch(self.fetcher.ended)
        self.checkpoints = runner_mod.AgentCheckpoints(self.runner.reader)
        self.executor = executor_mod.Executor(
            plan, self.clock, self.cloud, self.runner, self.checkpoints,
            journal, drop_at_mtt=True, watch_hangs=True)
        # While polls fail: {'failures', 'for_s' (wall), 'error'}.
        self.failing = None


def _connect(settings, journal=None):
    try:
        conn = clouds.connect(settings.cloud)
    except clouds.ConfigError as exc:
        raise CloudError(str(exc)) from None
    if journal is not None:
        journal.secrets = conn.secrets
    return conn


def _guard(call, *args):
    """Run ``call``, turning cloud failures into one line."""
    try:
        return call(*args)
    except nova.SetupError as exc:
        raise CloudError('the cloud lacks what the job needs: %s' % exc) \
            from None
    except CLOUD_ERRORS as exc:
        raise CloudError(errors.describe(exc)) from None


def interruption_rates(settings, names):
    """The interruption rates the cloud publishes for the job flavors
    ``names`` (:func:`.nova.published_rates`)."""
    return _guard(nova.published_rates, nova.client(_connect(settings)),
                  names)


def new_job_id(job):
    return '%s-%s' % (job.name, secrets.token_hex(3))


def start(plan, job_path, settings, jobs_dir, say=print, source=None,
          job_id=None, t0=None, watch=None, inputs=None):
    """Validate against the cloud, then create the journal, stage the
    job's inputs and start.  A controller (:mod:`opie.bot.controller`)
    passes the job file's text, the id and start time its tenant gave
    the job, ``watch``, which sees every record as it is committed, and
    ``inputs``, the manifest of the inputs its tenant already staged
    (the job file's directory is on the tenant's machine)."""
    if source is None:
        with open(job_path, encoding='utf-8') as f:
            source = f.read()
    staged = inputs is not None
    if not staged:
        inputs = staging.scan(plan.job, job_path)
    job_id = job_id or new_job_id(plan.job)
    conn = _connect(settings)
    path = journal_mod.path_for(jobs_dir, job_id)
    try:
        journal = journal_mod.Journal(path, create=True)
        journal.lock()
    except journal_mod.JournalError as exc:
        raise ValueError(str(exc)) from None
    journal.secrets = conn.secrets
    if watch is not None:
        journal.watch(watch)
    t0 = time.time() if t0 is None else t0
    try:
        ctx = _guard(Job, journal, plan, settings, job_id, t0, conn, inputs,
                     jobs_dir)
    except CloudError:
        journal.close()
        os.unlink(path)
        raise
    journal.set_meta(job_id=job_id, job_source=source, job_path=job_path,
                     settings=dataclasses.asdict(settings), t0=t0,
                     status='running', inputs=inputs,
                     inputs_dir=None if staged else staging.job_dir(job_path))
    say('job %s: journal %s' % (job_id, path))
    try:
        if not staged:
            _guard(stage, ctx.store, journal, ctx.clock, journal.meta())
        _guard(ctx.executor.start)
    except BaseException:
        # Unlocked for whoever stops the job from its journal.
        journal.close()
        raise
    return ctx


def stage(store, journal, clock, meta):
    """Upload the job's inputs, unless the journal shows them staged
    (a client killed half-way through the upload finishes it here)."""
    if not meta.get('inputs') or any(
            r['event'] == 'inputs_staged' for r in journal.records()):
        return
    staging.upload(store, meta['inputs_dir'], meta['inputs'])
    journal.append({'t': clock.now(), 'event': 'inputs_staged',
                    'files': len(meta['inputs'])})


def _load(jobs_dir, job_id, lock=False):
    """The job's journal, settings and job; ``lock``: as its only
    writer."""
    try:
        path = journal_mod.path_for(jobs_dir, job_id)
        journal = journal_mod.Journal(path)
        if lock:
            journal.lock()
        meta = journal.meta()
    except journal_mod.JournalBusy as exc:
        raise CloudError('job %s: %s' % (job_id, exc)) from None
    except journal_mod.JournalError as exc:
        raise ValueError(str(exc)) from None
    if 'job_source' not in meta or meta.get('job_id') != job_id:
        raise ValueError('%s: not the journal of job %s' % (path, job_id))
    try:
        job = jobfile.parse(meta['job_source'], meta['job_path'])
    except jobfile.JobFileError as exc:
        raise ValueError('%s: its job file: %s' % (path, exc)) from None
    return journal, meta, job


def _reopen(jobs_dir, job_id, cloud):
    """Take over a journalled job and connect to its cloud (``cloud``,
    when given, overrides the journalled one)."""
    journal, meta, job = _load(jobs_dir, job_id, lock=True)
    settings = Settings(**meta['settings'])
    if cloud:
        settings.cloud = cloud
    conn = _connect(settings, journal)
    return journal, meta, job, settings, conn


def _state(journal, meta, records=None):
    """The job's :mod:`lifecycle` state, from its journal."""
    events = [r['event'] for r in (journal.records() if records is None
                                   else records)]
    return lifecycle.state(meta.get('status'), events, journal.driven())


def resume(jobs_dir, job_id, cloud=None, watch=None):
    journal, meta, job, settings, conn = _reopen(jobs_dir, job_id, cloud)
    if watch is not None:
        journal.watch(watch)
    state = _state(journal, meta)
    if state in lifecycle.FINAL:
        try:
            _refuse(journal, meta, job, settings, conn, state, jobs_dir)
        finally:
            journal.close()
    plan = map_choice.primary_map(job)
    ctx = _guard(Job, journal, plan, settings, job_id, meta['t0'], conn,
                 meta.get('inputs', {}), jobs_dir)
    _guard(stage, ctx.store, journal, ctx.clock, meta)
    _guard(_adopt, ctx, job)
    return ctx


def _refuse(journal, meta, job, settings, conn, state, jobs_dir):
    """A done or cancelled job is not run again; but servers its
    journal shows still billing (the client died right after the job's
    end, or during a cancel) serve nothing: they are deleted first, and
    the outputs a killed client had not fetched are fetched."""
    ended = []
    clock = clock_mod.RealClock(meta['t0'], settings.speed)
    if _leftovers(journal.records()):
        _, ended = _delete_servers(journal, meta['job_id'], job, conn,
                                   settings, clock, 'left over by a client '
                                   'killed when the job was %s' % state)
    fetched = _guard(_fetch_left, journal, meta, job, settings, conn, clock,
                     jobs_dir)
    try:
        lifecycle.check_resumable(meta['job_id'], state)
    except lifecycle.Final as exc:
        notes = ['the %d server(s) a killed client left running are '
                 'deleted' % len(ended)] if ended else []
        notes += ['the outputs of %d task(s) a killed client had not '
                  'fetched are fetched' % fetched] if fetched else []
        raise lifecycle.Final('; '.join([str(exc)] + notes)) from None


def _fetch_left(journal, meta, job, settings, conn, clock, jobs_dir):
    """Fetch the outputs of the tasks committed in the store whose
    fetch the journal does not show (a client killed in between); how
    many tasks."""
    try:
        store, _ = stores.open_store(settings.store, meta['job_id'], conn,
                                     create=False)
    except stores.StoreError:
        return 0        # deleted with its results: nothing to fetch
    fetcher = outputs.Fetcher(store, journal, clock,
                              datadir.of_jobs(jobs_dir), meta['job_id'])
    _queue_unfetched(fetcher, journal.records(), runner_mod.committed(store),
                     job)
    count = len(fetcher.pending)
    fetcher.run()
    return count


def _queue_unfetched(fetcher, records, committed, job):
    """The tasks of ``job`` committed but not fetched (a result of no
    task of the job is none of its outputs)."""
    fetcher.pending |= (committed & {t.id for t in job.tasks}) - {
        r['task'] for r in records
        if r['event'] in ('outputs_fetched', 'outputs_refused')}


def _adopt(ctx, job):
    records = ctx.journal.records()
    now = ctx.clock.now()
    created, intents = _owned(records)
    gone, active, deleting, errored = set(), set(), set(), set()
    started, finished = {}, set()
    for r in records:
        ev = r['event']
        if ev == 'task_finish':
            finished.add(r['task'])
        elif ev in report.SERVER_ENDS:
            gone.add(r['server'])
        elif ev == 'server_error':
            errored.add(r['server'])
        elif ev == 'server_active':
            active.add(r['server'])
        elif ev == 'server_deleting':
            deleting.add(r['server'])
        elif ev == 'task_start':
            started[(r['task'], r['server'])] = r['t']
            ctx.runner.started(r['task'], executor_mod.server_name(
                job, created[r['server']]['key']))
    cloud, runner = ctx.cloud, ctx.runner
    for sid in sorted((deleting | errored) & created.keys()):
        # Deleted, or about to be, when the client died: again, as the
        # call may never have reached Nova (a server in ERROR is both
        # lost to the job and still there).
        cloud.adopt(sid, executor_mod.server_name(job, created[sid]['key']),
                    nova.BUILD)
        cloud.delete_server(sid)
        if sid not in gone:
            ctx.journal.append(
                {'t': now, 'event': 'server_boot_failed', 'server': sid,
                 'tasks': 0} if sid in errored else
                {'t': now, 'event': 'server_delete', 'server': sid,
                 'reason': 'resumed delete'})
            gone.add(sid)
    # An intent's key is the server's name (executor_mod.server_name).
    for sid, name in cloud.orphans(intents, created):
        cloud.adopt(sid, name, nova.BUILD)
        cloud.delete_server(sid)
        ctx.journal.append({'t': now, 'event': 'orphan_delete',
                            'server': sid})
        # Its runs went unjournalled: any of its results is of a run
        # assigned.
        runner.unjournalled(name)
    live = {sid: r for sid, r in created.items() if sid not in gone}
    for sid, r in live.items():
        cloud.adopt(sid, executor_mod.server_name(job, r['key']),
                    nova.ACTIVE if sid in active else nova.BUILD)
    # Before the results are read: an assignment is journalled after it
    # is written.
    assigned = {sid: runner.adopt(sid) for sid in live}
    committed = runner.results()
    _queue_unfetched(ctx.fetcher, records, committed, job)
    ctx.executor.hangs.count.update(
        r['task'] for r in records if r['event'] == 'task_hung')
    # A task failed for hanging has no result, and is over all the same.
    done = committed | {
        r['task'] for r in records
        if r['event'] == 'task_failed' and r.get('reason') == 'hung'}
    _journal_finished_while_away(ctx, created, done - finished, now)
    adopted = []
    for sid, r in live.items():
        tasks = assigned[sid]
        runner.drop(sid, [t for t in tasks if t in done])
        flavor = job.flavors[r['flavor']]
        adopted.append(executor_mod.Adopted(
            sid, r['key'], flavor, r['market'], r['t'], sid in active,
            {t: (a['start'], started.get((t, sid), now))
             for t, a in tasks.items() if t not in done}))
    new_normal = max([int(r['key'][1:]) for r in created.values()
                      if r['key'].startswith('m')] or [0])
    taken_over = any(r['event'] == 'take_over' for r in records)
    ctx.executor.adopt(adopted, done, new_normal, taken_over,
                       stop=HORIZON_REASON if now >= _horizon(ctx)
                       else None)
    ctx.resumed = True


def _owned(records):
    """What the job created: ``{server id: its server_create record}``,
    and ``{nonce: server_creating record}`` of the create calls whose
    answer was never journalled (one writer makes one call at a time, so
    an answer belongs to the intent just before it)."""
    created, intents = {}, {}
    for r in records:
        if r['event'] == 'server_creating':
            intents[r['nonce']] = r
        elif r['event'] == 'server_create':
            if intents:
                intents.popitem()
            created[r['server']] = r
    return created, intents


def _journal_finished_while_away(ctx, created, tasks, now):
    """Tasks committed while no client ran end in the journal as any
    other, at the time and on the server whose agent committed them, so
    that ``status`` and the report count them."""
    by_name = {executor_mod.server_name(ctx.plan.job, r['key']): sid
               for sid, r in created.items()}
    ends = []
    for task_id in tasks:
        result = ctx.runner.result(task_id) or {}
        ended = result.get('ended_at')
        ends.append((min(now, ctx.clock.job_time(ended))
                     if isinstance(ended, (int, float)) else now,
                     task_id, by_name.get(result.get('server'))))
    for t, task_id, server in sorted(ends):
        ctx.journal.append({'t': t, 'event': 'task_finish',
                            'task': task_id, 'server': server,
                            'while_away': True})


def _horizon(ctx):
    """When the client gives up on the job: no run that long can still
    be of use, and every hour past it would be billed for nothing."""
    return sim_backend.HORIZON * ctx.plan.job.deadline_s


def loop(ctx, progress=None, progress_every_s=10.0, patient=False):
    """Drive the job until it is done, or until its horizon, when every
    server is deleted (:meth:`Executor.stop`); True if it finished.
    ``patient``: never give up on failed polls (see the module
    docstring)."""
    executor = ctx.executor
    full = getattr(ctx, 'resumed', False)
    next_line = time.monotonic()
    horizon = _horizon(ctx)
    first_failure = None
    while not executor.finished and not executor.stopped and \
            ctx.clock.now() < horizon:
        wait_s = ctx.settings.poll_s
        try:
            ctx.cloud.poll(full=full)
            full = False
            ctx.runner.poll_all()
            ctx.clock.run_due()
            ctx.fetcher.run()
            ctx.failing = None
        except CLOUD_ERRORS + (OSError,) as exc:
            failures = (ctx.failing or {}).get('failures', 0) + 1
            if failures == 1:
                first_failure = time.monotonic()
            ctx.failing = {'failures': failures,
                           'for_s': time.monotonic() - first_failure,
                           'error': errors.describe(exc)}
            if not patient and failures >= MAX_FAILED_POLLS:
                raise CloudError('%s; giving up for now: opie-bot resume %s'
                                 % (ctx.failing['error'], ctx.job_id)) \
                    from None
            if patient:
                wait_s = backoff(wait_s, failures)
        if progress is not None and time.monotonic() >= next_line:
            progress(executor.snapshot())
            next_line += progress_every_s
        _sleep(wait_s)
    if not executor.finished and not executor.stopped:
        _guard(executor.stop, HORIZON_REASON)
    # The tasks that ended on the last poll, or while no client ran.
    _guard(ctx.fetcher.run)
    ctx.journal.set_meta(status=lifecycle.DONE if executor.finished
                         else lifecycle.STOPPED)
    return executor.finished


def backoff(poll_s, failures):
    """A patient client's wait after ``failures`` failed polls in a row:
    the poll interval, doubled at each failure after the first, at most
    :data:`BACKOFF_CAP` intervals."""
    return poll_s * min(2.0 ** min(failures - 1, 64), BACKOFF_CAP)


def _sleep(seconds):
    time.sleep(seconds)


@dataclasses.dataclass
class Result:
    """What :func:`opie.bot.report.report.build` reads, for a cloud run."""
    plan: object
    records: list
    preemptions: list
    checkpoints: int
    finished: bool
    bill: list = None
    kh: float = None
    kr: float = None
    seed: int = None
    mode: str = 'openstack'


def build_report(ctx):
    records = ctx.journal.records()
    failed = {r['server'] for r in records if r['event'] == 'server_error'}
    preemptions = [{'t': r['t'], 'server': r['server'],
                    'event': 'terminate' if r['event'] == 'server_preempted'
                    else 'hibernate', 'servers': 1}
                   for r in records
                   if r['event'] in ('server_preempted', 'server_hibernated')
                   and r['server'] not in failed]
    result = Result(plan=ctx.plan, records=records, preemptions=preemptions,
                    checkpoints=ctx.checkpoints.taken(),
                    finished=ctx.executor.finished)
    return report.build(result, report.baseline(ctx.plan,
                                                sim_backend.run))


def status(jobs_dir, job_id, baseline=True):
    """Where a job stands, from its journal alone, at job time now
    (:mod:`opie.bot.report.jobstatus`); ``baseline``: with the normal-only
    plan's cost (a plan of the job: ``list`` does without)."""
    journal, meta, job = _load(jobs_dir, job_id)
    try:
        records = journal.records()
        state = _state(journal, meta, records)
    finally:
        journal.close()
    settings = meta.get('settings') or {}
    now = clock_mod.RealClock(meta.get('t0', 0.0),
                              settings.get('speed', 1.0)).now()
    return jobstatus.summarize(job_id, state, meta.get('t0'), job, records,
                               now, ended=state not in (
                                   lifecycle.RUNNING, lifecycle.PAUSED),
                               baseline=baseline)


def _store_of(meta, cloud):
    """The store of a journalled job, for a command that only reads
    (its journal too), so it works beside the client that drives the
    job, or beside its controller."""
    settings = Settings(**meta['settings'])
    settings.cloud = cloud or settings.cloud
    try:
        conn = None if stores.file_root(settings.store) else \
            _connect(settings)
        store, _ = _guard(stores.open_store, settings.store, meta['job_id'],
                          conn, False)
    except stores.StoreError as exc:
        raise CloudError(str(exc)) from None
    return store


def task_log(jobs_dir, job_id, task_id, tail=None, cloud=None):
    """The pieces of the log of ``task_id`` (:mod:`opie.bot.state.tasklogs`),
    or None if it has none yet."""
    journal, meta, job = _load(jobs_dir, job_id)
    journal.close()
    if task_id not in {t.id for t in job.tasks}:
        raise ValueError('job %s has no task %r' % (job_id, task_id))
    store = _store_of(meta, cloud)
    prefix = _guard(tasklogs.run_prefix, store, task_id)
    return None if prefix is None else _guarded(
        tasklogs.pieces(store, prefix, tail))


def fetch_outputs(jobs_dir, job_id, cloud=None):
    """Fetch the outputs of every task committed in the job's store into
    the data directory of ``jobs_dir`` (:func:`outputs.fetch_task`),
    over what is there: ({task: (files, skipped)}, {task: why refused}).
    """
    journal, meta, job = _load(jobs_dir, job_id)
    journal.close()
    store = _store_of(meta, cloud)
    data_dir = datadir.of_jobs(jobs_dir)
    fetched, refused = {}, {}
    # A result of no task of the job (written by a task with the store's
    # key) is none of its outputs.
    for task_id in sorted(_guard(runner_mod.committed, store)
                          & {t.id for t in job.tasks}):
        try:
            got = _guard(outputs.fetch_task, store, data_dir, job_id,
                         task_id)
        except outputs.REFUSED as exc:
            refused[task_id] = str(exc)
        else:
            if got is not None:
                fetched[task_id] = got
    return fetched, refused


def _guarded(pieces):
    try:
        yield from pieces
    except CLOUD_ERRORS as exc:
        raise CloudError(errors.describe(exc)) from None


def jobs(jobs_dir, look=None):
    """:func:`status` (or ``look``, called as it) of every job journalled
    in ``jobs_dir``, oldest first; a file that is not a job's is
    skipped."""
    out = []
    for name in sorted(os.listdir(jobs_dir)) if os.path.isdir(jobs_dir) \
            else []:
        if not name.endswith('.sqlite'):
            continue
        try:
            out.append((look or status)(jobs_dir, name[:-len('.sqlite')],
                                        baseline=False))
        except ValueError:
            continue
    return sorted(out, key=lambda st: (st['started'] or 0, st['job_id']))


def cancel(jobs_dir, job_id, cloud=None, delete_results=False):
    """Delete the servers the journal shows the job created, and its
    objects but its results (those too if ``delete_results``); journal
    each step.  (ids of servers left alone because someone removed their
    job tag, the job's state after the cancel).

    The intent is journalled first (``cancelling``): a cancel killed
    half-way leaves a job no ``resume`` runs again, and a second cancel
    finishes it.  A done job stays done: only its leftovers go.
    """
    journal, meta, job, settings, conn = _reopen(jobs_dir, job_id, cloud)
    clock = clock_mod.RealClock(meta['t0'], settings.speed)
    try:
        store, _ = stores.open_store(settings.store, job_id, conn,
                                     create=False)
    except stores.StoreError as exc:
        raise CloudError(str(exc)) from None
    final = lifecycle.DONE if _state(journal, meta) == lifecycle.DONE \
        else lifecycle.CANCELLED
    journal.append({'t': clock.now(), 'event': 'cancelling',
                    'delete_results': delete_results})
    kept, _ = _delete_servers(journal, job_id, job, conn, settings, clock,
                              'cancel')
    if delete_results:
        _guard(store.destroy)
    else:
        _guard(_delete_scratch, store)
    journal.append({'t': clock.now(), 'event': 'cancelled', 'kept': kept,
                    'results_kept': not delete_results})
    journal.set_meta(status=final)
    return kept, final


def stop(journal, job, conn, settings, clock, reason):
    """End a job whose driver cannot go on (a controller's error), from
    its journal alone, as :meth:`Executor.stop` does from a running
    client: journal ``stopped`` with ``reason`` (unless the journal
    shows the job stopped already: a horizon stop the cloud cut short),
    then delete every server the journal shows, each journalled.
    ``CloudError`` if the cloud fails: the servers left stay journalled
    as billing, for a ``resume`` or ``cancel``."""
    records = journal.records()
    if lifecycle.state(None, [r['event'] for r in records], True) != \
            lifecycle.STOPPED:
        journal.append({'t': clock.now(), 'event': 'stopped',
                        'reason': reason,
                        'servers': len(_billing(records))})
    journal.set_meta(status=lifecycle.STOPPED)
    _delete_servers(journal, journal.meta()['job_id'], job, conn, settings,
                    clock, reason)


def _delete_servers(journal, job_id, job, conn, settings, clock, reason):
    """Delete every server the journal shows the job created (and any
    its nonce shows a cut-short create made), each journalled before and
    after; (ids left alone because their job tag was removed, ids whose
    bill this ended)."""
    cloud_ = nova.NovaCloud(conn, job_id, settings.image, settings.network,
                            journal, clock, None)
    records = journal.records()
    created, intents = _owned(records)
    for sid, r in created.items():
        cloud_.adopt(sid, executor_mod.server_name(job, r['key']),
                     nova.BUILD)
    for sid, key in _guard(cloud_.orphans, intents, created):
        cloud_.adopt(sid, executor_mod.server_name(job, key), nova.BUILD)
    kept = _guard(cloud_.delete_all, reason)
    ended = sorted(_billing(records) - set(kept))
    for sid in ended:
        journal.append({'t': clock.now(), 'event': 'server_delete',
                        'server': sid, 'reason': reason})
    return kept, ended


def _leftovers(records):
    """Whether the journal shows servers still billing, or a create
    call whose answer it never got."""
    return bool(_billing(records) or _owned(records)[1])


def _billing(records):
    """The servers the journal shows created and not yet ended."""
    created = {r['server'] for r in records if r['event'] == 'server_create'}
    return created - {r['server'] for r in records
                      if r['event'] in report.SERVER_ENDS}


def _delete_scratch(store):
    """Delete the job's objects but its results: assignments, statuses
    and checkpoints only served the run."""
    for key in store.list():
        if not key.startswith(KEPT):
            store.delete(key)
