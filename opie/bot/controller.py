"""``opie-bot run --controller``: the job's client on a server of its own.

A job advances only while its client runs; a laptop that sleeps would
stop it.  With ``--controller`` the tenant's client starts the client on
a small *normal* server of the tenant's project (the controller) and
exits; the controller runs the job exactly as ``run --backend
openstack`` would (:mod:`opie.bot.openstack.live`), with a journal on
its own disk.

The two sides never reach each other: they meet in the job's store,
which both can reach, and in Nova:

``controller/server.json`` (tenant)
    The controller's own server id, as Nova answered the tenant: the
    controller deletes that server, and no other, once the job is over.
``controller/inputs.json`` (tenant)
    The manifest of the job's input files (:mod:`opie.bot.staging`),
    which the tenant's client uploaded before it made the controller:
    the job file's directory is on the tenant's machine.  (In the store,
    not the user data, which Nova bounds at 64 KiB.)
``controller/journal.json`` (controller)
    Every record of its journal and a heartbeat, published at every poll,
    and at once after a record the tenant's side must never miss: the
    intent of a server create (with its nonce), so that a controller that
    dies during the call leaves its server findable (the nonce rule of
    :mod:`opie.bot.openstack.nova`).  The job's end (``done``,
    ``stopped``) is published only with the report, and a cancel's
    records once the controller has done it.
``controller/cancel.json`` (tenant)
    A cancel request, read by the controller at every poll.
``controller/report.json``, ``controller/report.html`` (controller)
    The job's report, written before the controller deletes itself.

Task logs, results and outputs stay where the agents put them, so
commands that read them from the store (``logs``, ``outputs``) work the
same with or without a controller; the controller fetches the outputs
into its own data directory, ``opie-bot outputs`` into the tenant's.

The tenant's journal (``DATA_DIR/jobs/<job id>.sqlite``) holds what the
tenant's side did (the credential, the controller server) and the
controller's records, copied from the store by ``status``, ``cancel`` and
``resume``: a copy a local ``resume`` continues from, with the
job's id, start and settings, if the controller dies.  A controller is
*alive* while Nova shows its server active or building; a job that is
not over with its controller gone (deleted, stopped, in error) is
paused: ``resume`` takes it back (deletes what is left of the controller
and its credential, then resumes here) and ``cancel`` cleans up.
``cancel`` on a live controller asks it to stop and waits for its server
to go; a controller that does not answer in time is deleted (fenced)
before the tenant's side deletes the job's servers itself.

The controller acts with a Keystone application credential made for it
(:mod:`opie.bot.openstack.credentials`); a restricted credential may not
delete itself, so the tenant's side deletes it once the job is over,
and it expires on its own after the job's horizon.

Its code: the user data is a short Python script that imports this module
(installed on the image, or ``pip install``-ed at boot when missing) and
runs :func:`main` with the job and the credential, as the agents'
scripts carry theirs.
"""
import dataclasses
from importlib import metadata
import json
import math
import os
import secrets
import sys
import time

from novaclient import exceptions as nova_exc
import yaml

from opie.bot import agent
from opie.bot import datadir
from opie.bot import html
from opie.bot import jobfile
from opie.bot import journal as journal_mod
from opie.bot import lifecycle
from opie.bot import paths
from opie.bot import planner
from opie.bot import staging
from opie.bot.openstack import clock as clock_mod
from opie.bot.openstack import credentials
from opie.bot.openstack import live
from opie.bot.openstack import nova
from opie.bot.openstack import stores
from opie.bot.sim import backend as sim_backend
from opie.core import preemptible

SERVER_KEY = 'controller/server.json'
INPUTS_KEY = 'controller/inputs.json'
JOURNAL_KEY = 'controller/journal.json'
CANCEL_KEY = 'controller/cancel.json'
REPORT_KEY = 'controller/report'        # .json and .html
# The controller's cloud in the clouds.yaml its user data writes.
CLOUD = 'opie-controller'
# Nova states of a controller that may still act.
ALIVE = ('ACTIVE', 'BUILD', 'REBOOT', 'HARD_REBOOT', 'MIGRATING')
GONE = 'DELETED'
# Records published before the controller acts on them.
AT_ONCE = ('server_creating',)
# Records that end the job: published only once the report is in the
# store, so that the tenant's side, which deletes a finished job's
# controller, never deletes it while it writes the report.
LAST = ('done', 'stopped')
# How long a cancel waits for the controller, in polls (at least a
# minute): it reads the request at its next poll, then deletes servers.
CANCEL_POLLS = 60
MIN_WAIT_S = 60.0
REQUIREMENT = 'openstack-opie'


class CancelRequested(Exception):
    """The tenant asked the controller to cancel the job."""


def tag_for(job_id):
    """The controller's Nova tag: at most 60 characters, as Nova wants,
    for the longest job id (see :data:`opie.bot.schema`)."""
    return 'opie-ctl-%s' % job_id


# -- the tenant's side: start -------------------------------------------------

def smallest_flavor(job):
    """The job's flavor a controller needs least of: fewest vCPUs, then
    least memory (the client takes one core and little memory)."""
    return min(job.flavors.values(),
               key=lambda f: (f.vcpus, f.ram_mb, f.name)).name


def _flavor_id(client, name):
    """Nova's id of the normal flavor ``name``: ``CloudError`` if there
    is none, ``ValueError`` if it is preemptible."""
    found = [f for f in client.flavors.list(is_public=None)
             if f.name == name]
    if not found:
        raise live.CloudError('the cloud lacks what the job needs: no '
                              'flavor %r for the controller' % name)
    if preemptible.is_preemptible(found[0].get_keys()):
        raise ValueError('--controller-flavor %s is preemptible: the '
                         'controller must be a normal server' % name)
    return found[0].id


def _horizon_s(job, settings):
    """Wall seconds the job may run: its credential outlives them."""
    return sim_backend.HORIZON * job.deadline_s / settings.speed


def launch(plan, job_path, settings, jobs_dir, flavor=None, say=print):
    """Start job ``plan`` on a controller server; (job id, server id).

    Nothing billable or secret is left behind if a step fails: the
    credential comes first, and is deleted with the store and journal if
    a later step fails."""
    with open(job_path, encoding='utf-8') as f:
        source = f.read()
    job = plan.job
    inputs = staging.scan(job, job_path)
    conn = live._connect(settings)
    _refuse_twice(jobs_dir, job.name, source, conn)
    client = nova.client(conn)
    flavor = flavor or smallest_flavor(job)
    checker = nova.NovaCloud(conn, None, settings.image, settings.network,
                             None, None, None)
    live._guard(checker.check, job)
    flavor_id = live._guard(_flavor_id, client, flavor)
    job_id = live.new_job_id(job)
    swift = stores.file_root(settings.store) is None
    credential = None
    if not credentials.keystone_less(conn):
        try:
            credential = live._guard(
                credentials.create, conn, job_id, _horizon_s(job, settings),
                swift)
        except credentials.CredentialError as exc:
            raise ValueError('opie-bot run --controller: %s; nothing was '
                             'created' % exc) from None
    made = _Made(conn, credential)
    made.job_id = job_id
    try:
        return _launch(job_path, source, inputs, settings, jobs_dir, flavor,
                       flavor_id, job_id, conn, client, checker.image,
                       made, say)
    except BaseException:
        made.undo()
        raise


class _Made:
    """What a failing launch must take back, newest first."""

    def __init__(self, conn, credential):
        self.conn = conn
        self.credential = credential
        self.journal = None
        self.store = None
        self.server = None
        self.nonce = None

    def undo(self):
        if self.server is None and self.nonce is not None:
            # The create call may have reached Nova with no answer back.
            self.server = _by_nonce(self.conn, self.job_id, self.nonce)
        if self.server is not None:
            nova.client(self.conn).servers.delete(self.server)
        if self.store is not None:
            self.store.destroy()
        if self.journal is not None:
            self.journal.close()
            os.unlink(self.journal.path)
        if self.credential is not None:
            credentials.delete(self.conn, self.credential['id'])


def _by_nonce(conn, job_id, nonce):
    """The id of the job's controller server made by the create call of
    ``nonce``, or None."""
    found = [s.id for s in nova.client(conn).servers.list(
        search_opts={'tags': tag_for(job_id)})
        if (s.metadata or {}).get(nova.NONCE) == nonce]
    return found[0] if len(found) == 1 else None


def _launch(job_path, source, inputs, settings, jobs_dir, flavor, flavor_id,
            job_id, conn, client, image, made, say):
    credential = made.credential
    path = journal_mod.path_for(jobs_dir, job_id)
    try:
        journal = made.journal = journal_mod.Journal(path, create=True)
        journal.lock()
    except journal_mod.JournalError as exc:
        raise ValueError(str(exc)) from None
    journal.secrets = conn.secrets + (
        (credential['secret'],) if credential else ())
    t0 = time.time()
    clock = _clock(t0, settings)
    ctl = {'flavor': flavor, 'server': None, 'seen': 0,
           'credential': credential and credential['id']}
    journal.set_meta(job_id=job_id, job_source=source, job_path=job_path,
                     settings=dataclasses.asdict(settings), t0=t0,
                     status=lifecycle.RUNNING, controller=ctl,
                     inputs=inputs, inputs_dir=staging.job_dir(job_path))
    if credential:
        journal.append({'t': clock.now(), 'event': 'credential_create',
                        'credential': credential['id'],
                        'expires_at': credential['expires_at']})
    try:
        made.store, _ = stores.open_store(settings.store, job_id, conn,
                                          create=True)
    except stores.StoreError as exc:
        raise live.CloudError(str(exc)) from None
    live._guard(live.stage, made.store, journal, clock, journal.meta())
    agent.write_json(made.store, INPUTS_KEY, inputs)
    config = {'job_id': job_id, 'job_path': os.path.basename(job_path),
              'job_source': source, 't0': t0,
              'settings': dict(dataclasses.asdict(settings), cloud=CLOUD),
              'cloud': credentials.cloud_entry(conn, credential)}
    nonce = made.nonce = secrets.token_hex(8)
    journal.append({'t': clock.now(), 'event': 'controller_creating',
                    'nonce': nonce, 'flavor': flavor})
    server = live._guard(lambda: client.servers.create(
        '%s-controller' % job_id, image, flavor_id,
        userdata=user_data(config), nics=settings.network,
        meta={'opie-job': job_id, 'opie-controller': 'true',
              nova.NONCE: nonce},
        tags=[tag_for(job_id)]))
    made.server = server.id
    journal.append({'t': clock.now(), 'event': 'controller_create',
                    'server': server.id})
    journal.set_meta(controller=dict(ctl, server=server.id))
    agent.write_json(made.store, SERVER_KEY, {'server': server.id})
    journal.close()
    say('job %s: journal %s' % (job_id, path))
    say('job %s runs on controller server %s (flavor %s); this machine '
        'may go off: opie-bot status %s (cancel %s stops it)'
        % (job_id, server.id, flavor, job_id, job_id))
    return job_id, server.id


def _refuse_twice(jobs_dir, name, source, conn):
    """A job file already running under a controller is not started on
    a second one: that would run and bill every task twice."""
    for st in live.jobs(jobs_dir):
        if not st['job_id'].startswith(name + '-'):
            continue
        journal, meta, _ = live._load(jobs_dir, st['job_id'])
        journal.close()
        ctl = meta.get('controller')
        if ctl is None or meta.get('job_source') != source:
            continue
        current = _view(jobs_dir, st['job_id'], conn)
        if current['state'] not in lifecycle.FINAL:
            raise ValueError(
                'opie-bot run --controller: job %s of this job file is %s '
                'on controller server %s: opie-bot status %s (opie-bot '
                'cancel %s first to run it again)' % (
                    st['job_id'], current['state'], ctl['server'],
                    st['job_id'], st['job_id']))


def user_data(config):
    """The controller's cloud-init user script: this module (from the
    image, else installed at boot) run with ``config``."""
    return ('#!/usr/bin/env python3\n'
            '"""opie-bot controller of job %s."""\n'
            'import json\nimport subprocess\nimport sys\n\n'
            'try:\n    from opie.bot import controller\n'
            'except ImportError:\n'
            '    subprocess.run([sys.executable, "-m", "pip", "install", '
            '"--user", %r], check=True)\n'
            '    from opie.bot import controller\n\n'
            'controller.main(json.loads(%r))\n'
            % (config['job_id'], _requirement(), json.dumps(config)))


def _requirement():
    """The release the tenant runs, for an image without opie."""
    try:
        return '%s==%s' % (REQUIREMENT, metadata.version(REQUIREMENT))
    except metadata.PackageNotFoundError:
        return REQUIREMENT


def _clock(t0, settings):
    return clock_mod.RealClock(t0, settings.speed)


# -- the tenant's side: status, resume, cancel -------------------------------

def _view(jobs_dir, job_id, conn=None, reports_dir=None):
    """Bring the tenant's journal up to date with the controller's and
    clean up after a job that is over; what the tenant's side knows of
    the controller (a dict: ``state`` of the job, ``server``, its Nova
    ``server_state``, ``heard_s`` since its last heartbeat, and
    ``credential_deleted``), or None for a job without one."""
    journal, meta, _ = live._load(jobs_dir, job_id)
    try:
        ctl = meta.get('controller')
        if ctl is None:
            return None
        settings = live.Settings(**meta['settings'])
        conn = conn or live._connect(settings)
        if not ctl.get('taken_back'):
            journal.close()
            journal, meta, _ = _locked(jobs_dir, job_id)
            ctl = _sync(journal, meta, settings, conn, reports_dir)
        # Holding the lock, this command is no client driving the job;
        # once taken back, a local client may be.
        state = lifecycle.state(meta.get('status'), [
            r['event'] for r in journal.records()],
            driven=bool(ctl.get('taken_back')) and journal.driven())
        server_state = _server_state(conn, ctl)
        if state in (lifecycle.DONE, lifecycle.CANCELLED,
                     lifecycle.STOPPED) and not ctl.get('taken_back'):
            ctl = _clean_up(journal, meta, conn, ctl, server_state)
            server_state = _server_state(conn, ctl)
        elif state == lifecycle.PAUSED and server_state in ALIVE:
            state = lifecycle.RUNNING
        heard = ctl.get('heard')
        return {'state': state, 'server': ctl.get('server'),
                'server_state': server_state,
                'taken_back': bool(ctl.get('taken_back')),
                'heard_s': None if heard is None
                else max(0.0, time.time() - heard),
                'credential_deleted': ctl.get('credential') is None}
    finally:
        journal.close()


def _locked(jobs_dir, job_id):
    """The job's journal as its writer; a local client holding it (a
    resume, a cancel) is the one to ask."""
    try:
        return live._load(jobs_dir, job_id, lock=True)
    except live.CloudError as exc:
        raise ValueError(str(exc)) from None


def _sync(journal, meta, settings, conn, reports_dir):
    """Copy the controller's new records and its report, if any."""
    ctl = _found(journal, meta, conn, meta['controller'])
    try:
        store, _ = stores.open_store(settings.store, meta['job_id'], conn,
                                     create=False)
    except stores.StoreError:
        return ctl      # deleted with its results: nothing to copy
    published = _published(store)
    if published is None:
        return ctl
    records, heartbeat = published
    seen = ctl.get('seen', 0)
    # An older copy of the object (Swift may answer one after an
    # overwrite) has fewer records: nothing new, and none copied twice.
    for record in records[seen:]:
        journal.append(record)
    ctl = dict(ctl, seen=max(seen, len(records)), heard=heartbeat)
    journal.set_meta(controller=ctl)
    if reports_dir is not None:
        _copy_report(store, reports_dir, meta['job_id'])
    return ctl


def _published(store):
    """(records, heartbeat) of the controller's published journal, or
    None if there is none or it is not one: whatever the store holds,
    ``status`` answers and ``cancel`` and ``resume`` go on from what the
    tenant's journal already has."""
    try:
        published = live._guard(agent.read_json, store, JOURNAL_KEY)
    except ValueError:      # not JSON, not UTF-8
        return None
    if not isinstance(published, dict):
        return None
    records, heartbeat = published.get('records'), published.get(
        'heartbeat')
    if not isinstance(records, list) or not _number(heartbeat) or not all(
            isinstance(r, dict) and _number(r.get('t'))
            and isinstance(r.get('event'), str) for r in records):
        return None
    return records, heartbeat


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(
        value, bool) and math.isfinite(value)


def _found(journal, meta, conn, ctl):
    """``ctl`` with its server, if a tenant's client killed in ``run
    --controller`` left it only in the journal's records (the create's
    answer) or in Nova (the nonce of a create whose answer was lost)."""
    if ctl.get('server'):
        return ctl
    server = None
    for r in journal.records():
        if r['event'] == 'controller_create':
            server = r['server']
        elif r['event'] == 'controller_creating' and server is None:
            server = live._guard(_by_nonce, conn, meta['job_id'],
                                 r['nonce'])
    if server is None:
        return ctl
    ctl = dict(ctl, server=server)
    journal.set_meta(controller=ctl)
    return ctl


def _copy_report(store, reports_dir, job_id):
    stem = os.path.join(reports_dir, job_id)
    for suffix in ('.json', '.html'):
        data = store.get(REPORT_KEY + suffix)
        if data is not None and not os.path.exists(stem + suffix):
            paths.check_file(stem + suffix)
            os.makedirs(reports_dir, exist_ok=True)
            paths.write_text(stem + suffix, data.decode('utf-8'))


def _server_state(conn, ctl):
    if not ctl.get('server'):
        return GONE
    try:
        return nova.client(conn).servers.get(ctl['server']).status
    except nova_exc.NotFound:
        return GONE


def _clean_up(journal, meta, conn, ctl, server_state):
    """After the job: the controller server (normally gone by itself)
    and the credential go."""
    clock = _clock(meta['t0'], live.Settings(**meta['settings']))
    if server_state != GONE:
        _delete_server(journal, clock, conn, ctl['server'], 'job over')
    # Keystone may refuse or fail: the credential stays journalled as
    # live, for the next command to delete.
    if ctl.get('credential') and live._guard(credentials.delete, conn,
                                             ctl['credential']):
        journal.append({'t': clock.now(), 'event': 'credential_delete',
                        'credential': ctl['credential']})
        ctl = dict(ctl, credential=None)
        journal.set_meta(controller=ctl)
    return ctl


def _delete_server(journal, clock, conn, server_id, reason):
    journal.append({'t': clock.now(), 'event': 'controller_deleting',
                    'server': server_id, 'reason': reason})
    try:
        live._guard(nova.client(conn).servers.delete, server_id)
    except live.CloudError:
        pass    # already gone: a NotFound is the answer wanted
    journal.append({'t': clock.now(), 'event': 'controller_delete',
                    'server': server_id})


def status(jobs_dir, job_id, reports_dir=None):
    """:func:`live.status`, with the controller's view for a job that
    has one (``controller`` in the dict)."""
    view = _view(jobs_dir, job_id, reports_dir=reports_dir)
    st = live.status(jobs_dir, job_id)
    if view is not None:
        if view['state'] == lifecycle.RUNNING:
            st['status'] = lifecycle.RUNNING
        st['controller'] = view
    return st


def describe(view):
    """One line about the controller, for ``status``."""
    if view['taken_back']:
        return 'controller: none any more (the job was taken back here)'
    server = view['server']
    if view['server_state'] in ALIVE:
        return 'controller: server %s %s, last heard %s' % (
            server, view['server_state'], 'never' if view['heard_s'] is None
            else '%.0f s ago' % view['heard_s'])
    if view['state'] in lifecycle.FINAL + (lifecycle.STOPPED,):
        return 'controller: server %s deleted after the job; credential %s' \
            % (server, 'deleted' if view['credential_deleted']
               else 'not yet deleted')
    return ('controller: server %s is %s and nobody drives the job: '
            'opie-bot resume runs it here, opie-bot cancel deletes its '
            'servers' % (server, view['server_state'].lower()))


def take_back(jobs_dir, job_id, cloud=None):
    """Before a local ``resume``: refuse while the controller lives;
    otherwise delete what is left of it and its credential, so that the
    job has one driver again: this machine."""
    view = _view(jobs_dir, job_id, _cloud(jobs_dir, job_id, cloud),
                 _reports(jobs_dir))
    if view is None or view['taken_back']:
        return
    if view['server_state'] in ALIVE and view['state'] not in \
            lifecycle.FINAL:
        raise ValueError(
            'job %s runs on controller server %s (%s): opie-bot cancel %s '
            'stops it; resume takes the job back once that server is gone'
            % (job_id, view['server'], view['server_state'], job_id))
    _fence(jobs_dir, job_id, cloud, 'taken back')


def _reports(jobs_dir):
    """The reports directory beside ``jobs_dir`` (:mod:`datadir`): a
    report the controller left is copied before the job is taken back
    (no ``status`` copies it after) or cancelled (which deletes it from
    the store with the job's other objects)."""
    return datadir.reports(os.path.dirname(os.path.abspath(jobs_dir)))


def _cloud(jobs_dir, job_id, cloud):
    """A connection to the job's cloud (``cloud`` overrides it)."""
    journal, meta, _ = live._load(jobs_dir, job_id)
    journal.close()
    settings = live.Settings(**meta['settings'])
    if cloud:
        settings.cloud = cloud
    return live._connect(settings)


def _fence(jobs_dir, job_id, cloud, reason, wait_s=None):
    """Delete the controller's server (waiting ``wait_s`` for Nova to
    end it, so it can act no more) and its credential; from now on the
    tenant's side alone drives the job."""
    conn = _cloud(jobs_dir, job_id, cloud)
    journal, meta, _ = _locked(jobs_dir, job_id)
    try:
        ctl = meta['controller']
        settings = live.Settings(**meta['settings'])
        ctl = _sync(journal, meta, settings, conn, None)
        clock = _clock(meta['t0'], settings)
        if _server_state(conn, ctl) != GONE:
            _delete_server(journal, clock, conn, ctl['server'], reason)
            if wait_s is not None:
                _wait(lambda: _server_state(conn, ctl) == GONE, wait_s,
                      settings.poll_s)
        meta['controller'] = ctl
        ctl = _clean_up(journal, meta, conn, ctl, GONE)
        journal.set_meta(controller=dict(ctl, taken_back=True))
    finally:
        journal.close()


def cancel(jobs_dir, job_id, cloud=None, say=print):
    """Before the tenant's ``cancel`` deletes what the journal shows: a
    live controller is asked to cancel and given time to do it (its
    journal knows its last servers); then it is fenced, whatever it did.
    """
    conn = _cloud(jobs_dir, job_id, cloud)
    view = _view(jobs_dir, job_id, conn, _reports(jobs_dir))
    if view is None or view['taken_back']:
        return
    journal, meta, _ = live._load(jobs_dir, job_id)
    journal.close()
    settings = live.Settings(**meta['settings'])
    wait_s = max(MIN_WAIT_S, CANCEL_POLLS * settings.poll_s)
    if view['server_state'] in ALIVE and view['state'] not in \
            lifecycle.FINAL:
        store, _ = stores.open_store(settings.store, job_id, conn,
                                     create=False)
        agent.write_json(store, CANCEL_KEY, {'requested_at': time.time()})
        say('job %s: cancel requested; waiting for controller server %s '
            'to stop' % (job_id, view['server']))
        _wait(lambda: _server_state(conn, meta['controller']) == GONE,
              wait_s, settings.poll_s)
    _fence(jobs_dir, job_id, cloud, 'cancel', wait_s)


def _wait(done, limit_s, every_s):
    """Poll ``done`` until it holds or ``limit_s`` wall seconds pass."""
    end = time.monotonic() + limit_s
    while not done() and time.monotonic() < end:
        _pause(every_s)


def _pause(seconds):
    time.sleep(seconds)


# -- the controller's side ---------------------------------------------------

class Publisher:
    """Publishes the controller's journal to the job's store, as the
    journal commits it, and reads the tenant's cancel request there.
    Until :attr:`final`, the records from the job's end (:data:`LAST`)
    on are held back."""

    def __init__(self, store):
        self.store = store
        self.records = []
        self.final = False

    def record(self, record):
        self.records.append(record)
        if record['event'] in AT_ONCE:
            self.publish()

    def publish(self):
        records = self.records
        if not self.final:
            ends = [i for i, r in enumerate(records) if r['event'] in LAST]
            records = records[:ends[0]] if ends else records
        agent.write_json(self.store, JOURNAL_KEY,
                         {'records': records, 'heartbeat': time.time()})

    def tick(self, snapshot=None):
        """At every poll: publish, then stop if asked to (whatever the
        request holds).  A store that fails is asked again at the next
        poll, as the loop retries its own calls: one error of Swift must
        not end the only client of the job."""
        try:
            self.publish()
            asked = self.store.get(CANCEL_KEY) is not None
        except live.CLOUD_ERRORS + (OSError,) as exc:
            _console('the job\'s store failed (%s); again at the next poll'
                     % type(exc).__name__)
            return
        if asked:
            raise CancelRequested()


def _console(text):
    """The controller's lines go to its server's console log."""
    print(text, file=sys.stderr, flush=True)


def main(config, workdir=None):
    """Run the job of ``config`` to its end, then delete this server."""
    home = workdir or os.environ.get('HOME') or os.getcwd()
    root = os.path.join(home, 'opie-bot')
    os.makedirs(root, mode=0o700, exist_ok=True)
    clouds_yaml = os.path.join(root, 'clouds.yaml')
    fd = os.open(clouds_yaml, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
        yaml.safe_dump({'clouds': {CLOUD: config['cloud']}}, f)
    os.environ['OS_CLIENT_CONFIG_FILE'] = clouds_yaml
    settings = live.Settings(**config['settings'])
    job_id = config['job_id']
    conn = live._connect(settings)
    store, _ = stores.open_store(settings.store, job_id, conn, create=False)
    jobs_dir = datadir.jobs(root)
    publisher = Publisher(store)
    plan = planner.primary_map(jobfile.parse(config['job_source'],
                                             config['job_path']))
    ctx = live.start(plan, config['job_path'], settings, jobs_dir,
                     say=_console, source=config['job_source'], job_id=job_id,
                     t0=config['t0'], watch=publisher.record,
                     inputs=agent.read_json(store, INPUTS_KEY))
    try:
        live.loop(ctx, publisher.tick, settings.poll_s)
    except CancelRequested:
        ctx.journal.close()
        own = agent.read_json(store, SERVER_KEY)
        # Results and this journal stay for the tenant's side, whose own
        # cancel deletes them if asked.
        live.cancel(jobs_dir, job_id, CLOUD)
        # The cancel's records too (its own journal): the tenant's side
        # must see a cancelled job even if it did not wait for it.
        publisher.records = _records(jobs_dir, job_id)
    else:
        own = agent.read_json(store, SERVER_KEY)
        try:
            rep = live.build_report(ctx)
            store.put(REPORT_KEY + '.json',
                      json.dumps(rep, indent=1).encode())
            store.put(REPORT_KEY + '.html', html.render(rep).encode())
        except Exception as exc:    # the job is over all the same
            _console('no report: %s: %s' % (type(exc).__name__, exc))
        finally:
            ctx.journal.close()
    # The last word, then this server goes: the tenant's side reads the
    # one, Nova ends the other (and this process with it).
    publisher.final = True
    publisher.publish()
    if own is not None and _is_own(conn, own['server'], job_id):
        nova.client(conn).servers.delete(own['server'])


def _records(jobs_dir, job_id):
    journal = journal_mod.Journal(journal_mod.path_for(jobs_dir, job_id))
    try:
        return journal.records()
    finally:
        journal.close()


def _is_own(conn, server_id, job_id):
    """Whether ``server_id`` (read from the store, which the job's agents
    may write too) is this job's controller: no other server is deleted.
    """
    try:
        server = nova.client(conn).servers.get(server_id)
    except nova_exc.NotFound:
        return False
    meta = server.metadata or {}
    return meta.get('opie-job') == job_id and \
        meta.get('opie-controller') == 'true'
