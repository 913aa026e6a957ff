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

"""The executor: HADS Alg. 5, driven by cloud and task events.

It acts (creates and deletes servers, starts, kills and moves tasks,
journals all of it); where a task goes it asks of
:mod:`opie.bot.hads.assign` (Alg. 4, 6, 7 and 8, Eq. 4), and when to
hand the job over to normal servers of the take-over watch
(:mod:`opie.bot.hads.takeover_watch`).  What it does on each event, and
why: ``doc/source/design/client.rst``, *The executor*.
"""
import bisect
import math

from opie.bot.hads import assign
from opie.bot.hads import fleet as fleet_mod
from opie.bot.hads import hangs as hangs_mod
from opie.bot.hads import interfaces
from opie.bot.hads import migration
from opie.bot.job import model
from opie.bot.hads import takeover_watch


def server_name(job, key):
    """The name the executor gives the cloud for server ``key``."""
    return '%s-%s' % (job.name, key)


class Adopted:
    """A live server handed to :meth:`Executor.adopt`; ``running`` maps
    a task to (fraction it started from, job time it started)."""

    def __init__(self, server_id, key, flavor, market, created, active,
                 running):
        self.server_id = server_id
        self.key = key
        self.flavor = flavor
        self.market = market
        self.created = created
        self.active = active
        self.running = running


class Executor:
    def __init__(self, plan, clock, cloud, runner, checkpoints, journal,
                 on_done=None, drop_at_mtt=False, watch_hangs=False):
        self.job = plan.job
        self.plan = plan
        self.clock = clock
        self.cloud = cloud
        self.runner = runner
        self.checkpoints = checkpoints
        self.journal = journal
        self.on_done = on_done
        self.fleet = fleet_mod.Fleet(self.job)
        self.assigner = assign.Assigner(self.job, self.fleet)
        self.watch = takeover_watch.Watch(self.fleet, clock, self._review)
        self.deadline = self.job.deadline_s
        self.alpha = self.job.policy.alpha_s
        self.finished = False
        self.stopped = None
        self._new_normal = 0
        self.drop_at_mtt = drop_at_mtt
        self.hangs = hangs_mod.Hangs(self) if watch_hangs else None
        cloud.watch(self._server_event)
        runner.watch(self._task_event)

    # -- bookkeeping ----------------------------------------------------

    def now(self):
        return self.clock.now()

    def _log(self, event, **fields):
        fields.update(t=self.now(), event=event)
        self.journal.append(fields)

    def _create(self, flavor, market, key, reason):
        preemptible = market == model.PREEMPTIBLE
        server_id = self.cloud.create_server(
            server_name(self.job, key), flavor, preemptible)
        server = fleet_mod.Server(server_id, key, flavor, market,
                                  self.fleet.slots(flavor), self.now(),
                                  self.alpha)
        self.fleet.add(server)
        self._log('server_create', server=server_id, key=key,
                  flavor=flavor.name, market=market, price_h=server.price_h,
                  reason=reason)
        return server

    def _cancel(self, server):
        for name in ('mtt_timer', 'ac_timer'):
            timer = getattr(server, name)
            if timer is not None:
                self.clock.cancel(timer)
                setattr(server, name, None)
        for timer in server.stop_timers.values():
            self.clock.cancel(timer)
        server.stop_timers = {}

    def _delete(self, server, reason):
        self._cancel(server)
        ended_first = self.cloud.delete_server(server.id)
        server.end(self.now())
        if ended_first:
            # Preempted since the last poll: the caller has dealt with its
            # tasks; the report counts it with the preemptions (a
            # ``reason`` would be read as how it ended).
            self._log('server_preempted', server=server.id, tasks=0,
                      found_deleting=reason)
        else:
            self._log('server_delete', server=server.id, reason=reason)

    # -- start and end --------------------------------------------------

    def start(self):
        plan = self.plan
        self._log('plan', dspot=plan.dspot, deadline=self.deadline,
                  servers=len(plan.servers),
                  expected_cost=plan.expected_cost,
                  expected_makespan=plan.makespan, risks=plan.risks)
        for ps in plan.servers:
            server = self._create(ps.flavor, ps.market, ps.key, 'plan')
            server.waiting = [t for t, _, _ in
                              sorted(ps.tasks, key=lambda x: x[1])]
        self._watch()

    def adopt(self, servers, done, new_normal, taken_over=False,
              stop=None):
        """Continue the job of a killed client.

        ``servers`` (:class:`Adopted`) are the servers the journal and the
        cloud show alive, with the tasks their agents run; ``done`` the
        tasks whose results are committed; ``new_normal`` how many normal
        servers migrations created so far (their keys go on from there).
        Running tasks stay where they are.  The other unfinished tasks
        were queued, stranded, or on their way to a new server when the
        client died: they go through Alg. 6 again, as if their server had
        just been lost.  A job the take-over had handed to normal servers
        (``taken_over``) is handed over again at once, so that no
        preemptible server runs any of it again.  With a ``stop`` reason
        (the job is past its horizon) nothing is placed or created: every
        server is deleted (:meth:`stop`).
        """
        self.fleet.done = set(done)
        for task_id in self.fleet.done:
            self.fleet.saved[task_id] = 1.0
        self._new_normal = new_normal
        running = set()
        for a in servers:
            server = fleet_mod.Server(a.server_id, a.key, a.flavor, a.market,
                                      self.fleet.slots(a.flavor), a.created,
                                      self.alpha)
            self.fleet.add(server)
            server.active = a.active
            for task_id, (saved, started) in a.running.items():
                run = self.fleet.run_for(task_id, a.flavor, a.market, saved)
                server.running[task_id] = fleet_mod.Running(run, started)
                running.add(task_id)
                self._watch_run(server, task_id)
            server.state = (fleet_mod.BUSY if server.running and a.active
                            else fleet_mod.IDLE if a.active
                            else fleet_mod.BOOTING)
        pending = [t for t in self.fleet.tasks
                   if t not in self.fleet.done and t not in running]
        self._log('resume', servers=len(servers), done=len(self.fleet.done),
                  running=len(running), pending=len(pending))
        if len(self.fleet.done) == len(self.fleet.tasks):
            self._finish()
            return
        if stop is not None:
            self.stop(stop)
            return
        if taken_over:
            mapped = self.watch.map_now()
            if mapped.finish != math.inf:
                self._take_over(mapped)
                return
        self._migrate(pending, None)
        for server in self.fleet.in_state(fleet_mod.IDLE):
            self._became_idle(server)
        self._watch()

    def stop(self, reason):
        """End the job unfinished: journal why, then delete every live
        server (each delete journalled before and after), so nothing
        bills on after the client.  The number deleted."""
        self.stopped = reason
        live = self.fleet.live()
        self._log('stopped', reason=reason, servers=len(live))
        self.watch.forget()
        for server in live:
            for task_id in server.running:
                self.runner.kill(server.id, task_id)
            server.running.clear()
            server.waiting = []
            self._delete(server, reason)
        return len(live)

    def _watch_run(self, server, task_id):
        if self.hangs is not None:
            self.hangs.watch(server, task_id)

    def hung(self, server, task_id, failed):
        """A run of ``task_id`` outlived its bound (:mod:`hangs`): its
        server is deleted, its other tasks move as from a lost server, and
        the task runs elsewhere, or, if ``failed``, ends as failed."""
        self.runner.kill(server.id, task_id)
        del server.running[task_id]
        self._log('task_hung', task=task_id, server=server.id,
                  failed=failed)
        queue = server.queue()
        for other in server.running:
            self.runner.kill(server.id, other)
        server.running.clear()
        server.waiting = []
        self._delete(server, 'task %s hung' % task_id)
        if failed:
            self._log('task_failed', task=task_id, reason='hung',
                      exit_status=None)
            self._ended(task_id, None)
            if self.finished:
                return
        else:
            queue.insert(0, task_id)
        self._migrate(queue, server)
        self._recheck_mtt()
        self._watch()

    def _finish(self):
        self.finished = True
        self.watch.forget()
        self._log('done', tasks=len(self.fleet.done))
        for server in self.fleet.live():
            self._delete(server, 'job done')
        if self.on_done is not None:
            self.on_done()

    # -- events -----------------------------------------------------------

    def _server_event(self, event):
        server = self.fleet.servers.get(event.server_id)
        if server is None or server.state == fleet_mod.GONE:
            return
        hibernated = server.state == fleet_mod.HIBERNATED
        if (event.kind in (interfaces.HIBERNATED, interfaces.ACTIVE)
                and hibernated
                or event.kind == interfaces.RESUMED and not hibernated):
            # A cloud seen again after a client restart may report a
            # server hibernated twice, active before it resumed, or back
            # from a hibernation the client never saw: a hibernated server
            # comes back only by resuming, and one that never hibernated
            # ran on as far as the client knows.
            return
        handler = {interfaces.ACTIVE: self._on_active,
                   interfaces.HIBERNATED: self._on_hibernated,
                   interfaces.RESUMED: self._on_resumed,
                   interfaces.TERMINATED: self._on_terminated,
                   interfaces.BOOT_FAILED: self._on_boot_failed,
                   interfaces.NOTICE: lambda s: self._on_notice(s, event.at),
                   }[event.kind]
        handler(server)
        self._watch()

    def _task_event(self, event):
        server = self.fleet.servers.get(event.server_id)
        if server is None or event.task_id not in server.running:
            # Told twice, or by a server the task has left: the run the
            # executor counts on is elsewhere.
            return
        if event.kind == interfaces.STOPPED:
            self._log('task_stopped', task=event.task_id, server=server.id)
            self._lose(server, [event.task_id])
        del server.running[event.task_id]
        server.changed()
        if event.kind == interfaces.STOPPED:
            self._migrate([event.task_id], server)
        else:
            self._ended(event.task_id, server.id)
        if self.finished:
            return
        self._dispatch(server)
        if not server.running and not server.waiting:
            self._became_idle(server)
        self._watch(progress=True)

    def _ended(self, task_id, server_id):
        """``task_id`` will not run again (committed, or failed); the
        job is done with its last task."""
        self.fleet.done.add(task_id)
        self.fleet.saved[task_id] = 1.0
        self._log('task_finish', task=task_id, server=server_id)
        if len(self.fleet.done) == len(self.fleet.tasks):
            self._finish()

    def _on_active(self, server):
        server.active = True
        server.ready_at = self.now()
        server.changed()
        self._log('server_active', server=server.id)
        if server.queue():
            server.state = fleet_mod.BUSY
            self._dispatch(server)
        else:
            self._became_idle(server)

    def _on_notice(self, server, at):
        """The server goes at ``at``: see the module's docstring."""
        if (server.notice_at is not None or not server.spot
                or server.state == fleet_mod.HIBERNATED):
            return
        server.notice_at = at
        now = self.now()
        queue, server.waiting = server.waiting, []
        server.changed()
        running = sorted(server.running)
        stopping, leaving = [], []
        for task_id in running:
            run = server.running[task_id]
            if run.end <= at:
                continue     # it ends before the server goes
            reach = run.run.elapsed_for(self.fleet.worth_saving(task_id))
            when = now + max(reach - run.elapsed(now), 0.0)
            if when + run.run.dump_s <= at:
                stopping.append(task_id)
                server.stop_timers[task_id] = self.clock.call_at(
                    when, self._stop, server, task_id)
            elif now + run.run.dump_s <= at:
                # Too young for a checkpoint worth its restore in time:
                # what it did is less than a restore, so it leaves now.
                leaving.append(task_id)
        self._log('server_notice', server=server.id, at=at, running=running,
                  stopping=stopping, leaving=leaving, queued=len(queue))
        self._lose(server, leaving)
        for task_id in leaving:
            self.runner.kill(server.id, task_id)
            del server.running[task_id]
        self._migrate(leaving + queue, server)
        if server.state == fleet_mod.BUSY and not server.queue():
            self._became_idle(server)
        self._recheck_mtt()

    def _stop(self, server, task_id):
        del server.stop_timers[task_id]
        run = server.running.get(task_id)
        if run is None:
            return      # it ended sooner than the executor expected
        run.stopped = run.elapsed(self.now())
        self.runner.stop(server.id, task_id)
        self._log('task_stop', task=task_id, server=server.id)

    def _lose(self, server, task_ids):
        """Journal the work of ``task_ids``' runs on preempted (or
        noticed) ``server`` that no checkpoint saved, before they are
        dropped."""
        now = self.now()
        for task_id in task_ids:
            run = server.running[task_id]
            latest = self.checkpoints.latest(task_id)
            saved = max(run.run.start, latest.fraction if latest else 0.0)
            done = run.run.done_after(run.elapsed(now))
            # To the microsecond: the executor and the runner time a run
            # apart, and a rounding error is no lost work.
            self._log('work_lost', task=task_id, server=server.id,
                      lost_s=round(max(done - saved, 0.0) * run.run.work_s,
                                   6),
                      noticed=server.notice_at is not None)

    def _on_hibernated(self, server):
        self._cancel(server)
        was_idle = server.state == fleet_mod.IDLE
        server.state = fleet_mod.HIBERNATED
        server.hib_since = self.now()
        for run in server.running.values():
            run.left = run.end - self.now()
        queue = server.queue()
        self._log('server_hibernated', server=server.id, tasks=len(queue))
        if was_idle:
            # Frozen queues may have counted on this idle server.
            self._recheck_mtt()
        if not queue:
            if self.drop_at_mtt:
                self._delete(server, 'hibernated with nothing to do')
            return
        self._arm_mtt(server, *self.assigner.mtt(server, self.now()))

    def _arm_mtt(self, server, mtt, rt):
        """Migrate ``server``'s frozen tasks at ``mtt`` (Eq. 4, from
        ``rt``), or now if that is past."""
        server.mtt = mtt
        # No server can take the tasks (rt infinite): migrate now, and
        # journal the unknown as null, which every JSON reader reads.
        known = math.isfinite(rt)
        self._log('mtt', server=server.id,
                  mtt=server.mtt if known else None,
                  rt=rt if known else None)
        if server.mtt <= self.now():
            self._mtt_reached(server)
        else:
            server.mtt_timer = self.clock.call_at(server.mtt,
                                                  self._mtt_reached, server)

    def _recheck_mtt(self):
        """Estimate mtt again where Alg. 4 counted on what is now gone.

        An estimate reserves nothing: a server it counted on may be
        deleted at the end of its cycle, preempted, or taken by other
        tasks before mtt; the replacement's boot would then eat the margin
        of A7.
        """
        for server in self.fleet.in_state(fleet_mod.HIBERNATED):
            if server.mtt_timer is None:
                continue
            mtt, rt = self.assigner.mtt(server, self.now())
            if mtt < server.mtt:
                self.clock.cancel(server.mtt_timer)
                server.mtt_timer = None
                self._arm_mtt(server, mtt, rt)

    def _mtt_reached(self, server):
        server.mtt_timer = None
        if server.state == fleet_mod.HIBERNATED:
            self._migrate_frozen(server)
            if self.drop_at_mtt:
                self._delete(server, 'not resumed by its mtt')
        self._watch()

    def _on_resumed(self, server):
        now = self.now()
        away = server.thaw(now)
        server.notice_at = None
        for run in server.running.values():
            run.end = now + run.left
            run.left = None
        server.changed()
        self._log('server_resumed', server=server.id,
                  before_mtt=server.mtt_timer is not None)
        self._cancel(server)
        if not server.active:
            server.ready_at += away
        if server.queue():
            self._busy(server)
            self._guard(server)
            self._dispatch(server)
        elif server.active:
            self._became_idle(server)
        else:
            server.state = fleet_mod.BOOTING

    def _on_boot_failed(self, server):
        """A server that never booted (ERROR) is lost like a preempted
        one, but journalled as what it is: the cloud deleted it for no
        one, and the tenant reads boot failures apart from preemptions."""
        self._on_terminated(server, 'server_boot_failed')

    def _on_terminated(self, server, event='server_preempted'):
        self._cancel(server)
        self._lose(server, server.running)
        server.end(self.now())
        queue = server.queue()
        server.running.clear()
        server.waiting = []
        self._log(event, server=server.id, tasks=len(queue))
        self._migrate(queue, server)
        self._recheck_mtt()

    # -- actions ----------------------------------------------------------

    def _dispatch(self, server):
        while (server.active and server.state == fleet_mod.BUSY
               and server.notice_at is None
               and server.waiting and len(server.running) < server.slots):
            task_id = server.waiting[0]
            if not server.spot and not self.watch.may_start(server,
                                                            task_id):
                return
            server.waiting.pop(0)
            run = self.fleet.run_for(task_id, server.flavor, server.market)
            if run.start > 0:
                self.runner.restore(server.id, task_id, run,
                                    self.checkpoints.latest(task_id))
            else:
                self.runner.start(server.id, task_id, run)
            server.running[task_id] = fleet_mod.Running(run, self.now())
            server.changed()
            self._log('task_start', task=task_id, server=server.id,
                      saved=run.start, wall=run.wall_s)
            self._watch_run(server, task_id)

    def _became_idle(self, server):
        server.state = fleet_mod.IDLE
        if server.notice_at is None:
            self._take_stranded(server)
        if server.state == fleet_mod.IDLE and server.notice_at is None:
            self._work_steal(server)
        if server.state == fleet_mod.IDLE:
            end = server.ac_end(self.now(), self.job.policy.ac_s)
            server.ac_timer = self.clock.call_at(end, self._cycle_end, server)

    def _cycle_end(self, server):
        server.ac_timer = None
        if server.state != fleet_mod.IDLE:
            return
        if not server.spot and not self.watch.may_give_up(server):
            self._log('server_kept', server=server.id,
                      reason='the take-over needs it')
            # Past the end just reached, whatever the rounding of now.
            end = server.ac_end(self.now() + 1.0, self.job.policy.ac_s)
            server.ac_timer = self.clock.call_at(end, self._cycle_end, server)
            return
        self._delete(server, 'idle at the end of its allocation cycle')
        if not server.spot and self.fleet.stranded:
            # A normal limit just freed up.
            stranded, self.fleet.stranded = self.fleet.stranded, []
            self._migrate(stranded, None)
        self._recheck_mtt()
        self._watch()

    def _busy(self, server):
        if server.ac_timer is not None:
            self.clock.cancel(server.ac_timer)
            server.ac_timer = None
        server.state = fleet_mod.BUSY if server.active else fleet_mod.BOOTING

    def _take_stranded(self, server):
        taken = [t for t in self.fleet.stranded
                 if self.fleet.tasks[t].memory_mb <= server.flavor.ram_mb]
        for task_id in taken:
            self.fleet.stranded.remove(task_id)
            server.waiting.append(task_id)
            self._log('task_migrate', task=task_id, src=None,
                      dst=server.id, via='stranded',
                      saved=self.fleet.saved[task_id])
        if taken:
            server.changed()
            self._busy(server)
            self._dispatch(server)

    def _work_steal(self, thief):
        stolen = 0
        for victim, picked in self.assigner.stealable(thief, self.now()):
            for task_id in self._steal_from(thief, victim, picked):
                stolen += 1
                self._log('task_steal', task=task_id, src=victim.id,
                          dst=thief.id)
        self._log('work_stealing', server=thief.id, stolen=stolen)
        if stolen:
            self._busy(thief)
            self._dispatch(thief)

    def _steal_from(self, thief, victim, picked):
        """Alg. 8 on one victim: the picked tasks that end earlier on the
        thief move there, if together they bill no more than leaving them
        (A9); otherwise only those the thief ends within the allocation
        cycle it has paid for, which cost nothing.

        The tasks are judged together: one task stolen onto an idle
        server of several slots pays for a whole cycle of it while it
        shortens the victim's queue by a fraction of its run.  A queue
        never ends later for losing tasks, so the victim's side needs no
        check for the free ones.
        """
        now = self.now()
        paid = thief.ac_end(now, self.job.policy.ac_s)
        queues = list(victim.waiting), list(thief.waiting)
        bill = self.assigner.billed_past_cycles((thief, victim), now)
        taken, free = [], 0
        for task_id, end_there in picked:
            proj = self.fleet.projection(thief, now)[0]
            end = proj.eft_with(self.fleet.wall(task_id, thief.flavor,
                                                thief.market))
            if end > end_there or self.assigner.check(
                    task_id, thief.flavor, thief.market, proj) is None:
                continue
            victim.waiting.remove(task_id)
            victim.changed()
            self.fleet.enqueue(thief, task_id, now)
            taken.append(task_id)
            free += end < paid
        if free < len(taken) and (
                self.assigner.billed_past_cycles((thief, victim), now) > bill):
            taken = taken[:free]
            moved = set(taken)
            victim.waiting = [t for t in queues[0] if t not in moved]
            victim.changed()
            thief.waiting = queues[1] + taken
            thief.changed()
        return taken

    def _guard(self, server):
        """Re-establish the spare time a hibernation ate into."""
        now = self.now()
        while server.waiting:
            proj, _ = self.fleet.projection(server, now)
            if self.assigner.keeps_spare(proj.finish, proj.longest):
                break
            task_id = server.waiting.pop()
            server.changed()
            self._log('resume_guard', server=server.id, task=task_id)
            self._migrate([task_id], server)
        # Which running tasks restart elsewhere is the migration policy's
        # verdict.  A restart is timed on the fastest flavor a normal
        # server may use, which need not be the server's own.
        for task_id, run in list(server.running.items()):
            flavor = self.fleet.redo_flavor(task_id)
            if flavor is None:
                continue
            last = run.run.checkpoints[-1] if run.run.checkpoints else \
                run.run.start
            redo = self.fleet.run_for(task_id, flavor, model.NORMAL,
                                      last).wall_s
            if not migration.restart_now(
                    run.end, redo,
                    lambda: self._redo_from_latest(task_id, flavor),
                    now, self.alpha, self.deadline):
                continue
            self.runner.kill(server.id, task_id)
            del server.running[task_id]
            server.changed()
            self._log('resume_guard', server=server.id, task=task_id)
            self._migrate([task_id], server)

    def _redo_from_latest(self, task_id, flavor):
        """Wall seconds a normal server of ``flavor`` takes to redo the
        task from its latest checkpoint."""
        latest = self.checkpoints.latest(task_id)
        return self.fleet.run_for(
            task_id, flavor, model.NORMAL,
            latest.fraction if latest else 0.0).wall_s

    def _migrate_frozen(self, server):
        queue = server.queue()
        for task_id in server.running:
            self.runner.kill(server.id, task_id)
        self._lose(server, server.running)
        server.running.clear()
        server.waiting = []
        server.changed()
        self._migrate(queue, server)

    def _migrate(self, task_ids, source):
        """Alg. 6 over ``task_ids``, taken off ``source``."""
        now = self.now()
        for task_id in task_ids:
            latest = self.checkpoints.latest(task_id)
            self.fleet.saved[task_id] = latest.fraction if latest else 0.0
        idle, busy = self.assigner.candidates(exclude=source)
        touched = {}
        for task_id in task_ids:
            choice = self.assigner.target(task_id, now, idle, busy)
            if choice.kind is None:
                self._log('no_target', task=task_id, limits=choice.limits)
                choice = self.assigner.late_target(task_id, now, idle + busy)
            if choice is None:
                self.fleet.stranded.append(task_id)
                self._log('stranded', task=task_id)
                continue
            if choice.kind == assign.NEW:
                self._new_normal += 1
                server = self._create(choice.flavor, model.NORMAL,
                                      'm%d' % self._new_normal, 'migration')
                bisect.insort(busy, server, key=fleet_mod.Server.sort_key)
            else:
                server = choice.server
            if server.state == fleet_mod.IDLE:
                idle.remove(server)
                bisect.insort(busy, server, key=fleet_mod.Server.sort_key)
                self._busy(server)
            server.waiting.append(task_id)
            server.changed()
            touched[server.id] = server
            self._log('task_migrate', task=task_id,
                      src=source.id if source else None,
                      dst=server.id, via=choice.kind,
                      saved=self.fleet.saved[task_id])
        for server in touched.values():
            self._dispatch(server)
        if touched:
            self._recheck_mtt()

    # -- the take-over (opie.bot.hads.takeover_watch decides) -----------------

    def _watch(self, progress=False):
        """After each event (``progress``: a task ended): review the job
        if the watch's map may no longer show it can wait."""
        if not self.finished and self.watch.stale(progress):
            self._review()

    def _review(self):
        """Carry out the take-over watch's verdict on the job as it is."""
        if self.finished:
            return
        verdict = self.watch.review()
        lost = verdict.lost
        if lost is not None:
            self._log('take_over_lost', limits=lost.limits,
                      finish=lost.finish if lost.finish != math.inf
                      else None)
        if verdict.release:
            for server in self.fleet.live():
                self._dispatch(server)
        if verdict.hand_over is not None:
            self._take_over(verdict.hand_over)

    def _take_over(self, mapped):
        """Put every task at risk where the take-over maps it; from now on
        the job runs on normal servers only."""
        self.watch.handed_over()
        tasks = self.watch.at_risk()
        source = {t: s.id for s in self.fleet.live() for t in s.queue()}
        for server in self.fleet.live():
            if server.spot:
                for task_id in server.running:
                    self.runner.kill(server.id, task_id)
                if server.state == fleet_mod.HIBERNATED:
                    self._lose(server, server.running)
                server.running.clear()
            server.waiting = []
            server.changed()
        self.fleet.stranded = []
        # Killed runs wrote their last checkpoints: map again with those;
        # the map found before still counts, on the shorter tasks.
        for task_id in tasks:
            latest = self.checkpoints.latest(task_id)
            self.fleet.saved[task_id] = latest.fraction if latest else 0.0
        mapped = self.watch.map_now(previous=mapped)
        self._log('take_over', finish=mapped.finish, tasks=len(tasks),
                  servers=len(mapped.targets))
        kept = {id(t.server) for t in mapped.targets}
        for server in self.fleet.live():
            if server.spot:
                self._delete(server, 'the job was taken over by normal '
                             'servers')
            elif not server.running and id(server) not in kept:
                self._delete(server, 'not in the take-over')
        for target in mapped.targets:
            server = target.server
            if server is None:
                self._new_normal += 1
                server = self._create(target.flavor, model.NORMAL,
                                      'm%d' % self._new_normal, 'take-over')
            server.waiting = list(target.tasks)
            server.changed()
            for task_id in target.tasks:
                self._log('task_migrate', task=task_id,
                          src=source.get(task_id), dst=server.id,
                          via='take-over', saved=self.fleet.saved[task_id])
            if server.state == fleet_mod.IDLE:
                self._busy(server)
            self._dispatch(server)

    # -- progress ---------------------------------------------------------

    def snapshot(self):
        """Figures for a progress line."""
        now = self.now()
        live = self.fleet.live()
        cost = sum(s.billed_s(now) * s.price_h / 3600.0
                   for s in self.fleet.servers.values())
        running = 0
        work = float(len(self.fleet.done))
        finish = now
        for server in live:
            if server.state == fleet_mod.HIBERNATED:
                continue
            running += len(server.running)
            for task_id in server.running:
                work += self.runner.poll(server.id, task_id).progress
            finish = max(finish, self.fleet.projection(server, now)[0].finish)
        return {
            't': now,
            'done': len(self.fleet.done),
            'tasks': len(self.fleet.tasks),
            'running': running,
            'progress': work / len(self.fleet.tasks),
            'servers': len(live),
            'cost': cost,
            'normal': sum(1 for s in live if not s.spot),
            'hibernated': sum(1 for s in live
                              if s.state == fleet_mod.HIBERNATED),
            'slack': self.deadline - finish,
        }
