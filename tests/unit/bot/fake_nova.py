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

"""A Nova and task agents in memory, under the real ``opie-bot`` client.

``install`` puts :class:`FakeNova` where ``opie.bot.openstack.nova``
builds its novaclient and image adapter, so ``cli.main(['run', ...,
'--backend', 'openstack'])``, ``resume``, ``status`` and ``cancel`` run
their real code against it, in one process and in well under a second of
wall time (job time runs ``SPEED`` times faster).  Servers boot on the
next poll (or fail to, for flavors in ``error_flavors``); each poll, the
agents of ACTIVE servers commit every task assigned to them except those
in ``hang`` (or, on their first attempt, in ``hang_once``), and stop
those the client asks to stop, with a checkpoint of the fraction
``progress`` says (by default the one the run started from).  With
``agents_dir`` set, the real :class:`agent.Agent` runs each server's
tasks instead (real processes, waited for within the poll, so the test
decides nothing from timing).  A controller's server runs no agent: its
settings go to ``controllers`` for the test to run.  ``killer``
simulates a SIGKILL right after the journal's Nth record.
"""
import ast
import datetime
import itertools
import json
import os
import tempfile
import types

from novaclient import exceptions as nova_exc

from opie.bot import agent
from opie.bot.state import journal as journal_mod
from opie.bot.openstack import nova

# Job seconds per wall second: a client's start-up (~0.1 s) is a few
# minutes of job time, well within the test job's deadline.
SPEED = 2000.0
IMAGE = 'img-1'


class Server:
    def __init__(self, sid, name, flavor, meta, tags):
        self.id = sid
        self.name = name
        self.status = 'BUILD'
        self.metadata = meta
        self.tags = tags
        self.flavor = {'original_name': flavor}
        self.image = {'id': IMAGE}
        self.user_id = None
        self.created = self.updated = _now()


class Servers:
    def __init__(self, owner):
        self.owner = owner
        self.all = {}
        self._ids = itertools.count(1)

    def create(self, name, image, flavor, userdata=None, nics=None,
               meta=None, tags=None):
        if any(len(tag) > 60 for tag in tags or ()):
            # Nova's limit (nova.objects.tag.MAX_TAG_LENGTH).
            raise nova_exc.BadRequest(400, 'Invalid input for tags')
        sid = 'srv-%03d' % next(self._ids)
        self.all[sid] = Server(sid, name, flavor, meta, tags)
        # The agent's (or controller's) settings: the literal after its
        # last line's call.
        config = json.loads(ast.literal_eval(
            userdata.rsplit('main(json.loads(', 1)[1].rsplit('))', 1)[0]))
        if 'controller.main(' in userdata:
            self.owner.controllers[sid] = config
        else:
            self.owner.configs[sid] = config
        return self.all[sid]

    def get(self, sid):
        server = self.all.get(sid)
        if server is None or server.status == 'DELETED':
            raise nova_exc.NotFound(404)
        return server

    def list(self, search_opts):
        self.owner.tick()
        if 'tags' in search_opts:
            return [s for s in self.all.values() if s.status != 'DELETED'
                    and search_opts['tags'] in s.tags]
        return list(self.all.values())

    def delete(self, sid):
        self.get(sid).status = 'DELETED'
        self.all[sid].updated = _now()

    def unshelve(self, sid):
        self.get(sid).status = 'ACTIVE'


class Flavor:
    def __init__(self, name):
        self.name = self.id = name

    def get_keys(self):
        return {'opie:preemptible': 'true'} \
            if name_is_preemptible(self.name) else {}


def name_is_preemptible(name):
    return name.endswith('-preemptible')


class FakeNova:
    """Nova's servers and flavors, and the agents on its servers."""

    def __init__(self, flavors):
        self.servers = Servers(self)
        self.flavors = types.SimpleNamespace(list=lambda is_public=None: [
            Flavor(nova.nova_flavor_name(f, p))
            for f in flavors for p in (False, True)])
        self.configs = {}
        self.controllers = {}   # server id -> the controller's settings
        self.error_flavors = set()
        self.hang = set()
        self.hang_once = set()  # hang on the first attempt only
        self.seen = set()       # the states servers have been in
        self.agents_dir = None  # run the real agent there (see module)
        # The fraction a run (task id, assignment) has done.
        self.progress = lambda task_id, a: a['start']
        self.agents = {}

    def live(self):
        """The ids of servers Nova still has."""
        return sorted(sid for sid, s in self.servers.all.items()
                      if s.status != 'DELETED')

    def tick(self):
        """Boot what was building, run what agents were given."""
        for sid, server in self.servers.all.items():
            if server.status == 'BUILD':
                server.status = 'ERROR' if server.flavor['original_name'] \
                    in self.error_flavors else 'ACTIVE'
                self.seen.add(server.status)
                server.updated = _now()
            elif server.status == 'ACTIVE' and sid in self.configs:
                if self.agents_dir:
                    self._real_agent(sid, self.configs[sid])
                else:
                    self._agent(self.configs[sid])

    def _real_agent(self, sid, config):
        """One cycle of the real agent that waits for its tasks' ends,
        and the cycle that reports them."""
        if sid not in self.agents:
            self.agents[sid] = agent.Agent(
                config, os.path.join(self.agents_dir, sid))
        server_agent = self.agents[sid]
        server_agent.cycle()
        for run in server_agent.runs.values():
            if run.proc is not None:
                run.proc.wait()
        server_agent.cycle()

    def _agent(self, config):
        """What a server's agent does in one cycle: commit its tasks."""
        store = agent.open_store(config['store'])
        base = 'servers/%s/' % config['server']
        tasks = {}
        for task_id, a in (agent.read_json(store, base + 'assign.json')
                           or {}).items():
            if a.get('stop'):
                fraction = self.progress(task_id, a)
                with tempfile.TemporaryDirectory() as state_dir:
                    agent.Agent(config, state_dir).checkpoint(
                        task_id, state_dir, fraction)
                tasks[task_id] = {'state': 'stopped', 'progress': fraction,
                                  'attempt': a['attempt']}
                continue
            if task_id in self.hang or (task_id in self.hang_once
                                        and a['attempt'] == 1):
                tasks[task_id] = {'state': 'running', 'progress': 0.0,
                                  'attempt': a['attempt']}
                continue
            committed = store.create('results/%s.json' % task_id,
                                     json.dumps({
                                         'task': task_id, 'exit_status': 0,
                                         'attempt': a['attempt'],
                                         'server': config['server'],
                                         'output': '', 'ended_at': None
                                     }).encode())
            tasks[task_id] = {'state': 'finished', 'progress': 1.0,
                              'attempt': a['attempt'],
                              'committed': committed, 'exit_status': 0}
        agent.write_json(store, base + 'status.json', {'tasks': tasks})


class Images:
    def get(self, url, params=None, raise_exc=True):
        return types.SimpleNamespace(
            status_code=200, json=lambda: {'image': {'id': IMAGE}})


class Killed(BaseException):
    """The client's SIGKILL: nothing after it runs, not even handlers."""


def killer(monkeypatch, after, event=None):
    """Kill the client right after the journal's ``after``-th record of
    this run (None: never), counting only ``event`` records if given; the
    journals it opens, which the test closes as the OS closes a
    process's files when it ends."""
    opened = []
    init, append = journal_mod.Journal.__init__, journal_mod.Journal.append
    count = itertools.count(1)

    def opening(self, *args, **kwargs):
        init(self, *args, **kwargs)
        opened.append(self)

    def appending(self, record):
        append(self, record)
        if after is not None and event in (None, record['event']) and \
                next(count) == after:
            raise Killed()
    monkeypatch.setattr(journal_mod.Journal, '__init__', opening)
    monkeypatch.setattr(journal_mod.Journal, 'append', appending)
    return opened


def install(monkeypatch, flavors):
    """A :class:`FakeNova` with ``flavors`` (job flavor names), used by
    every client the test runs."""
    fake = FakeNova(flavors)
    monkeypatch.setattr(nova, 'nova_client', types.SimpleNamespace(
        Client=lambda *args, **kwargs: fake))
    monkeypatch.setattr(nova, 'adapter', types.SimpleNamespace(
        Adapter=lambda *args, **kwargs: Images()))
    for name in ('OS_CLOUD', 'OS_CLIENT_CONFIG_FILE'):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv('OS_AUTH_TYPE', 'admin_token')
    monkeypatch.setenv('OS_ENDPOINT', 'http://127.0.0.1:1/v2.1')
    monkeypatch.setenv('OS_TOKEN', 'tok')
    return fake


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')
