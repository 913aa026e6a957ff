"""The Runner and CheckpointStore ports on the task agent.

The client never reaches a server: it writes each server's assignment to
the job's object store and reads back the agent's status, the checkpoints
and the results (:mod:`opie.bot.agent` describes the objects).  Each
assignment carries an attempt number, so an agent can tell a new run of
a task from the one it has.  Before starting a task the runner looks for
its result: a task another server already committed (it ended as its
server was lost) is reported finished without running again.  A run that
finds the result already there is a duplicate: journalled and counted,
never committed twice.  An assignment names the task's input objects
and its output patterns, so the agent stages the one and uploads the
other (:mod:`opie.bot.staging`, :mod:`opie.bot.outputs`).
"""
import json
import os

from opie.bot import agent
from opie.bot import ports
from opie.bot import staging

AGENT_SOURCE = os.path.join(os.path.dirname(agent.__file__), 'agent.py')


def user_data(config):
    """The agent and its settings as a cloud-init user script."""
    with open(AGENT_SOURCE, encoding='utf-8') as f:
        source = f.read()
    return ('#!/usr/bin/env python3\n%s\n\nif __name__ == \'__main__\':\n'
            '    main(json.loads(%r))\n' % (source, json.dumps(config)))


def committed(store):
    """The ids of the tasks whose result is in ``store``."""
    return {key[len('results/'):-len('.json')]
            for key in store.list('results/')}


class AgentCheckpoints:
    """The read side of the CheckpointStore port: agents write the
    checkpoints, the scheduler only asks for the latest."""

    def __init__(self, store):
        self.store = store

    def latest(self, task_id):
        latest = agent.read_json(self.store,
                                 'checkpoints/%s/latest.json' % task_id)
        if latest is None:
            return None
        return ports.Checkpoint(task_id, latest['fraction'],
                                latest['server'], latest['written_at'])

    def taken(self):
        """Checkpoints written so far, all tasks."""
        return sum(agent.read_json(self.store, key)['seq']
                   for key in self.store.list('checkpoints/')
                   if key.endswith('/latest.json'))


class AgentRunner(ports.Runner):
    def __init__(self, store, names, journal, clock, speed, retries=0):
        self.store = store
        self.names = names          # server id -> name in the store
        self.journal = journal
        self.clock = clock
        self.speed = speed
        self.retries = retries
        self.assigned = {}          # server id -> {task: assignment}
        self.status = {}            # server id -> {task: report}
        self.attempts = {}
        self.committed = set()
        self.files = {}             # task -> its inputs and outputs
        self._listeners = []

    # -- the port ---------------------------------------------------------

    def start(self, server_id, task_id, run):
        self._assign(server_id, task_id, run)

    def restore(self, server_id, task_id, run, checkpoint):
        self._assign(server_id, task_id, run)

    def poll(self, server_id, task_id):
        report = self.status.get(server_id, {}).get(task_id)
        progress = report['progress'] if report else \
            self.assigned[server_id][task_id]['start']
        return ports.TaskStatus(running=True, progress=progress)

    def kill(self, server_id, task_id):
        self.assigned[server_id].pop(task_id, None)
        self._write(server_id)

    def watch(self, callback):
        self._listeners.append(callback)

    # -- assignments ------------------------------------------------------

    def _assign(self, server_id, task_id, run):
        self.attempts[task_id] = self.attempts.get(task_id, 0) + 1
        offsets = [t / self.speed for t in run.checkpoint_times]
        self.assigned.setdefault(server_id, {})[task_id] = {
            'attempt': self.attempts[task_id],
            'command': self.commands[task_id],
            'start': run.start, 'work_s': run.work_s,
            'checkpoints_at': offsets, 'retries': self.retries,
            **self.files.get(task_id, {})}
        self._write(server_id)

    def _write(self, server_id):
        agent.write_json(self.store,
                         'servers/%s/assign.json' % self.names(server_id),
                         self.assigned.get(server_id, {}))

    def set_tasks(self, job, inputs):
        """What agents run: each task's command, the objects of its
        ``inputs`` (a :func:`staging.scan` manifest) and its outputs."""
        self.commands = {t.id: t.command for t in job.tasks}
        self.files = {t.id: {'inputs': staging.assigned(inputs, t),
                             'outputs': list(t.outputs)}
                      for t in job.tasks}

    # -- polling ----------------------------------------------------------

    def results(self):
        """Task ids whose result is committed."""
        return committed(self.store)

    def result(self, task_id):
        """The committed result of ``task_id``, or None."""
        return agent.read_json(self.store, 'results/%s.json' % task_id)

    def poll_all(self):
        """Read the status of every server running tasks; report ends."""
        for server_id, tasks in list(self.assigned.items()):
            if not tasks:
                continue
            status = agent.read_json(
                self.store, 'servers/%s/status.json' % self.names(server_id))
            reports = (status or {}).get('tasks', {})
            self.status[server_id] = reports
            for task_id, a in list(tasks.items()):
                report = reports.get(task_id)
                if report is None or report['attempt'] != a['attempt'] \
                        or report['state'] == 'running':
                    continue
                self._ended(server_id, task_id, report)
        self._already_committed()

    def _ended(self, server_id, task_id, report):
        del self.assigned[server_id][task_id]
        self._write(server_id)
        if not report.get('committed'):
            self.journal.append({'t': self.clock.now(),
                                 'event': 'task_duplicate', 'task': task_id,
                                 'server': server_id})
        if report['state'] == 'failed':
            self.journal.append({'t': self.clock.now(),
                                 'event': 'task_failed', 'task': task_id,
                                 'exit_status': report.get('exit_status')})
        self._emit(server_id, task_id)

    def _already_committed(self):
        """Assigned tasks whose result another run committed."""
        if not any(self.assigned.values()):
            return
        done = self.results()
        for server_id, tasks in list(self.assigned.items()):
            for task_id in [t for t in tasks if t in done]:
                result = self.result(task_id)
                if result['server'] == self.names(server_id) and \
                        result['attempt'] == tasks[task_id]['attempt']:
                    continue      # its own end: the next poll reports it
                del tasks[task_id]
                self._write(server_id)
                self.journal.append({'t': self.clock.now(),
                                     'event': 'task_found_committed',
                                     'task': task_id, 'server': server_id})
                self._emit(server_id, task_id)

    def _emit(self, server_id, task_id):
        event = ports.TaskEvent(ports.FINISHED, server_id, task_id)
        for listener in self._listeners:
            listener(event)

    def server_event(self, event):
        """A lost server runs nothing any more."""
        if event.kind in (ports.TERMINATED, ports.BOOT_FAILED):
            self.assigned.pop(event.server_id, None)
            self.status.pop(event.server_id, None)

    # -- resume -------------------------------------------------------------

    def adopt(self, server_id):
        """Take back a live server's assignment from the store; its tasks."""
        tasks = agent.read_json(
            self.store, 'servers/%s/assign.json' % self.names(server_id)) \
            or {}
        self.assigned[server_id] = tasks
        for task_id, a in tasks.items():
            self.attempts[task_id] = max(self.attempts.get(task_id, 0),
                                         a['attempt'])
        return tasks

    def drop(self, server_id, task_ids):
        for task_id in task_ids:
            self.assigned.get(server_id, {}).pop(task_id, None)
        self._write(server_id)
