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

"""The Runner and CheckpointStore interfaces on the task agent.

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
other (:mod:`opie.bot.state.staging`, :mod:`opie.bot.state.outputs`).  A
task asked to ``stop`` (its server has a notice) is reported ``STOPPED``
once its agent says it checkpointed and stopped that very run; a
``stopped`` the client did not ask for (a task can write its server's
status) is ignored.

Every task can write any object of the store (its agent's key is on its
server), so every object read back is checked (:class:`Reader`): one
that is not what an agent writes (not JSON, keys missing or of the wrong
kind, over :data:`agent.SMALL_OBJECT` bytes) is journalled once
(``store_unusable``, its key and why) and read as absent, never a
traceback that ends the client.  A result counts only if it is of a run
the client assigned, the task's server and attempt as journalled
(``task_start``), and a task reported ended only once its result is
there: no forged object makes the client take a task for done.
"""
import json
import math

from opie.bot import agent
from opie.bot.hads import interfaces
from opie.bot.state import staging

AGENT_SOURCE = agent.__file__


def user_data(config):
    """The agent and its settings as a cloud-init user script."""
    with open(AGENT_SOURCE, encoding='utf-8') as f:
        source = f.read()
    return ('#!/usr/bin/env python3\n%s\n\nif __name__ == \'__main__\':\n'
            '    main(json.loads(%r))\n' % (source, json.dumps(config)))


def committed(store):
    """The ids of the tasks with an object under ``results/`` (which
    may be forged: :meth:`AgentRunner.results` checks them)."""
    return {key[len('results/'):-len('.json')]
            for key in store.list('results/')}


STATES = ('running', 'finished', 'failed', 'stopped')


def finite_number(value):
    """Whether a JSON ``value`` from the store is a finite number (JSON may
    hold NaN and Infinity; a bool is no number)."""
    return isinstance(value, (int, float)) and not isinstance(
        value, bool) and math.isfinite(value)


def _count(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _not_dict_of(what, value, wrong):
    """Why ``value`` is not a dict whose values ``wrong`` finds none
    wrong with (None if it is)."""
    if not isinstance(value, dict):
        return 'is not a dict of %s' % what
    bad = [k for k, v in value.items() if wrong(v)]
    return 'its %s %r %s' % (what, bad[0], wrong(value[bad[0]])) \
        if bad else None


def _wrong_report(report):
    if not isinstance(report, dict):
        return 'is not a dict'
    if not _count(report.get('attempt')) or report.get('state') not in \
            STATES or not finite_number(report.get('progress')):
        return 'lacks an attempt, a state or a progress'
    return None


def _wrong_status(status):
    if not isinstance(status, dict):
        return 'is not a status'
    return _not_dict_of('task', status.get('tasks', {}), _wrong_report)


def _wrong_assignment(a):
    if not isinstance(a, dict) or not _count(a.get('attempt')) or \
            not finite_number(a.get('start')):
        return 'lacks an attempt or a start'
    return None


def _wrong_checkpoint(latest):
    if not isinstance(latest, dict) \
            or not finite_number(latest.get('fraction')) \
            or not _count(latest.get('seq')) \
            or not isinstance(latest.get('server'), str) \
            or not finite_number(latest.get('written_at')):
        return 'is not a checkpoint pointer'
    return None


class Reader:
    """JSON objects of the store, checked: None if absent or unusable
    (journalled once per key: a task may vary its forgery every poll)."""

    def __init__(self, store, journal, clock):
        self.store = store
        self.journal = journal
        self.clock = clock
        self.refused = set()

    def read(self, key, wrong):
        """The object ``key``, if ``wrong`` finds nothing wrong with it."""
        try:
            data = self.store.get(key, agent.SMALL_OBJECT)
            if data is None:
                return None
            value = json.loads(data)
        except ValueError as exc:     # not JSON, not UTF-8, too large, a link
            why = str(exc)
        else:
            why = wrong(value)
        if why is None:
            return value
        if key not in self.refused:
            self.refused.add(key)
            self.journal.append({'t': self.clock.now(),
                                 'event': 'store_unusable', 'key': key,
                                 'reason': why})
        return None


class AgentCheckpoints:
    """The read side of the CheckpointStore port: agents write the
    checkpoints, the executor only asks for the latest."""

    def __init__(self, reader):
        self.reader = reader

    def _latest(self, key):
        return self.reader.read(key, _wrong_checkpoint)

    def latest(self, task_id):
        latest = self._latest('checkpoints/%s/latest.json' % task_id)
        if latest is None:
            return None
        return interfaces.Checkpoint(task_id, latest['fraction'],
                                     latest['server'], latest['written_at'])

    def taken(self):
        """Checkpoints written so far, all tasks."""
        return sum((self._latest(key) or {'seq': 0})['seq']
                   for key in self.reader.store.list('checkpoints/')
                   if key.endswith('/latest.json'))


class AgentRunner(interfaces.Runner):
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
        self.runs = {}              # task -> {attempt: server name}
        self.unjournalled_servers = set()
        self.files = {}             # task -> its inputs and outputs
        self.reader = Reader(store, journal, clock)
        self._listeners = []

    # -- the port ---------------------------------------------------------

    def start(self, server_id, task_id, run):
        self._assign(server_id, task_id, run)

    def restore(self, server_id, task_id, run, checkpoint):
        self._assign(server_id, task_id, run)

    def poll(self, server_id, task_id):
        report = self.status.get(server_id, {}).get(task_id)
        progress = report['progress'] if report is not None else \
            self.assigned[server_id][task_id]['start']
        return interfaces.TaskStatus(running=True, progress=progress)

    def kill(self, server_id, task_id):
        self.assigned[server_id].pop(task_id, None)
        self._write(server_id)

    def stop(self, server_id, task_id):
        assignment = self.assigned.get(server_id, {}).get(task_id)
        if assignment is None:
            # Its server was lost meanwhile, or the assignment read back
            # on resume was unusable: nothing runs to stop.
            return
        assignment['stop'] = True
        self._write(server_id)

    def watch(self, callback):
        self._listeners.append(callback)

    # -- assignments ------------------------------------------------------

    def started(self, task_id, server):
        """A run of ``task_id`` on the server named ``server``, the next
        attempt (as assigned, or as the journal shows on resume)."""
        self.attempts[task_id] = self.attempts.get(task_id, 0) + 1
        self.runs.setdefault(task_id, {})[self.attempts[task_id]] = server

    def unjournalled(self, server):
        """The server named ``server`` ran what the journal lost."""
        self.unjournalled_servers.add(server)

    def _assign(self, server_id, task_id, run):
        self.started(task_id, self.names(server_id))
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
        """Task ids whose result is committed by a run the client
        assigned."""
        return {task_id for task_id in committed(self.store)
                if self.result(task_id) is not None}

    def result(self, task_id):
        """The committed result of ``task_id``, or None (also if it is
        no result of a run the client assigned)."""
        def wrong(result):
            if not isinstance(result, dict):
                return 'is not a result'
            runs = self.runs.get(task_id, {})
            attempt = result.get('attempt')
            server = result.get('server')
            if not _count(attempt) or not isinstance(server, str) or (
                    runs.get(attempt) != server
                    and server not in self.unjournalled_servers):
                return 'is of no run assigned (server %r, attempt %r)' % (
                    result.get('server'), attempt)
            return None
        return self.reader.read('results/%s.json' % task_id, wrong)

    def poll_all(self):
        """Read the status of every server running tasks; report ends
        (of a task whose result is there)."""
        for server_id, tasks in list(self.assigned.items()):
            if not tasks:
                continue
            status = self.reader.read(
                'servers/%s/status.json' % self.names(server_id),
                _wrong_status)
            reports = (status or {}).get('tasks', {})
            self.status[server_id] = reports
            for task_id, a in list(tasks.items()):
                report = reports.get(task_id)
                if report is None or report['attempt'] != a['attempt'] \
                        or report['state'] == 'running':
                    continue
                if report['state'] == 'stopped':
                    if a.get('stop'):
                        self._stopped(server_id, task_id)
                    continue
                if self.result(task_id) is None:
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

    def _stopped(self, server_id, task_id):
        del self.assigned[server_id][task_id]
        self._write(server_id)
        self._emit(server_id, task_id, interfaces.STOPPED)

    def _already_committed(self):
        """Assigned tasks whose result another run committed."""
        if not any(self.assigned.values()):
            return
        listed = committed(self.store)
        for server_id, tasks in list(self.assigned.items()):
            for task_id in [t for t in tasks if t in listed]:
                result = self.result(task_id)
                if result is None:
                    continue      # forged, or of no run assigned
                if result['server'] == self.names(server_id) and \
                        result['attempt'] == tasks[task_id]['attempt']:
                    continue      # its own end: the next poll reports it
                del tasks[task_id]
                self._write(server_id)
                self.journal.append({'t': self.clock.now(),
                                     'event': 'task_found_committed',
                                     'task': task_id, 'server': server_id})
                self._emit(server_id, task_id)

    def _emit(self, server_id, task_id, kind=interfaces.FINISHED):
        event = interfaces.TaskEvent(kind, server_id, task_id)
        for listener in self._listeners:
            listener(event)

    def server_event(self, event):
        """A lost server runs nothing any more."""
        if event.kind in (interfaces.TERMINATED, interfaces.BOOT_FAILED):
            self.assigned.pop(event.server_id, None)
            self.status.pop(event.server_id, None)

    # -- resume -------------------------------------------------------------

    def adopt(self, server_id):
        """Take back a live server's assignment from the store; its tasks."""
        tasks = self.reader.read(
            'servers/%s/assign.json' % self.names(server_id),
            lambda value: _not_dict_of('task', value, _wrong_assignment)) \
            or {}
        self.assigned[server_id] = tasks
        for task_id, a in tasks.items():
            self.attempts[task_id] = max(self.attempts.get(task_id, 0),
                                         a['attempt'])
            self.runs.setdefault(task_id, {})[a['attempt']] = \
                self.names(server_id)
        return tasks

    def drop(self, server_id, task_ids):
        for task_id in task_ids:
            self.assigned.get(server_id, {}).pop(task_id, None)
        self._write(server_id)
