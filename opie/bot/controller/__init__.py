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

"""``opie-bot run --controller``: the tenant's side of a job whose client
runs on a server of its own.

The tenant's client starts the controller (a small normal server of the
tenant's project) and exits; the controller's own loop is
:mod:`opie.bot.controller.remote`, and the two sides meet in the job's
store and in Nova (:mod:`opie.bot.controller.layout`).  This side reads
the controller's journal back, and fences the controller before it
drives a job again (``resume``) or takes it back (``cancel``): how and
why, ``doc/source/design/client.rst``, *The controller*.
"""
import dataclasses
from importlib import metadata
import json
import os
import secrets
import time

from novaclient import exceptions as nova_exc

from opie.core import contract
from opie import oneline
from opie.bot import agent
from opie.bot.state import datadir
from opie.bot.state import journal as journal_mod
from opie.bot.state import lifecycle
from opie.bot.state import paths
from opie.bot.state import staging
from opie.bot.openstack import clock as clock_mod
from opie.bot.openstack import credentials
from opie.bot.openstack import errors
from opie.bot.openstack import live
from opie.bot.openstack import nova
from opie.bot.openstack import runner
from opie.bot.openstack import stores
from opie.bot.sim import backend as sim_backend
from opie.bot.controller import layout

# Nova states of a controller at work: ``resume`` is refused outright,
# ``cancel`` asks it to cancel.  In any other state but GONE it may still
# run (ERROR, UNKNOWN on an unreachable host, RESIZE, SHUTOFF...): it is
# fenced (the design's *The controller*), never judged dead.
ALIVE = ('ACTIVE', 'BUILD', 'REBOOT', 'HARD_REBOOT', 'MIGRATING')
# A server Nova answers 404 for, or shows deleted: it can act no more.
GONE = 'DELETED'
# How long the tenant's side waits for the controller, in looks at
# Nova (a cancel: for it to cancel and go; a fence: for Nova to end it),
# and the least time between looks: a poll interval, at least a second,
# so at least a minute in all.
WAIT_POLLS = 60
MIN_WAIT_EVERY_S = 1.0
# The longest error from the controller's heartbeat ``status`` shows.
ERROR_CHARS = 200
REQUIREMENT = 'openstack-opie'


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
    if contract.is_preemptible(found[0].get_keys()):
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
        search_opts={'tags': layout.tag_for(job_id)})
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
    agent.write_json(made.store, layout.INPUTS_KEY, inputs)
    config = {'job_id': job_id, 'job_path': os.path.basename(job_path),
              'job_source': source, 't0': t0,
              'settings': dict(dataclasses.asdict(settings),
                               cloud=layout.CLOUD),
              'cloud': credentials.cloud_entry(conn, credential)}
    nonce = made.nonce = secrets.token_hex(8)
    journal.append({'t': clock.now(), 'event': 'controller_creating',
                    'nonce': nonce, 'flavor': flavor})
    server = live._guard(lambda: client.servers.create(
        '%s-controller' % job_id, image, flavor_id,
        userdata=user_data(config), nics=settings.network,
        meta={'opie-job': job_id, 'opie-controller': 'true',
              nova.NONCE: nonce},
        tags=[layout.tag_for(job_id)]))
    made.server = server.id
    journal.append({'t': clock.now(), 'event': 'controller_create',
                    'server': server.id})
    journal.set_meta(controller=dict(ctl, server=server.id))
    agent.write_json(made.store, layout.SERVER_KEY, {'server': server.id})
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
    """The controller's cloud-init user script: its loop (:func:`main`,
    from the image, else installed at boot) run with ``config``.  The
    script is the same in every release, so an image with another
    release of opie-bot runs it as well."""
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


def main(config, workdir=None):
    """The controller server's loop (:func:`.remote.main`), by the name
    every release's user data calls."""
    # Imported here: the loop is the server's, not the tenant's side.
    from opie.bot.controller import remote
    return remote.main(config, workdir)


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
    ``server_state``, ``heard_s`` since the tenant first read its
    current heartbeat, ``credential_deleted``, ``taken_back``, and when
    there is one: ``retrying``, the failed polls it is retrying,
    ``stopped``, why it stopped the job, ``kept``, why servers it could
    not delete keep running), or None for a job without one."""
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
        records = journal.records()
        # Holding the lock, this command is no client driving the job;
        # once taken back, a local client may be.
        state = lifecycle.state(meta.get('status'), [
            r['event'] for r in records],
            driven=bool(ctl.get('taken_back')) and journal.driven())
        if state in (lifecycle.DONE, lifecycle.CANCELLED,
                     lifecycle.STOPPED) and not ctl.get('taken_back'):
            ctl, server_state = _clean_up(journal, meta, conn, ctl,
                                          'job over')
        else:
            server_state = _server_state(conn, ctl)
            if state == lifecycle.PAUSED and server_state != GONE:
                state = lifecycle.RUNNING
        view = {'state': state, 'server': ctl.get('server'),
                'server_state': server_state,
                'taken_back': bool(ctl.get('taken_back')),
                'heard_s': None if ctl.get('heard_at') is None
                else max(0.0, _now() - ctl['heard_at']),
                'credential_deleted': ctl.get('credential') is None}
        if ctl.get('retrying') and state == lifecycle.RUNNING and \
                not ctl.get('taken_back'):
            view['retrying'] = ctl['retrying']
        for key, event in (('stopped', 'stopped'), ('kept', 'servers_kept')):
            last = [r for r in records if r['event'] == event][-1:]
            if last and state == lifecycle.STOPPED:
                view[key] = str(last[0].get('reason'))
        return view
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
    """Copy the controller's new records and its report, if any, and
    note its heartbeat (by this machine's clock: the design's *The
    controller*)."""
    ctl = _found(journal, meta, conn, meta['controller'])
    try:
        store, _ = stores.open_store(settings.store, meta['job_id'], conn,
                                     create=False)
    except stores.StoreError:
        return ctl      # deleted with its results: nothing to copy
    published = _published(store)
    if published is None:
        return ctl
    records, heartbeat, retrying = published
    seen = ctl.get('seen', 0)
    # An older copy of the object (Swift may answer one after an
    # overwrite) has fewer records: nothing new, and none copied twice.
    for record in records[seen:]:
        journal.append(record)
    ctl = dict(ctl, seen=max(seen, len(records)))
    if ctl.get('heartbeat') is None or heartbeat > ctl['heartbeat']:
        ctl.update(heartbeat=heartbeat, heard_at=_now(), retrying=retrying)
    journal.set_meta(controller=ctl)
    if reports_dir is not None:
        _copy_report(store, reports_dir, meta['job_id'])
    return ctl


def _published(store):
    """(records, heartbeat, retrying or None) of the controller's
    published journal, or None if there is none or it is not one:
    whatever the store holds, ``status`` answers and ``cancel`` and
    ``resume`` go on from what the tenant's journal already has."""
    try:
        published = live._guard(agent.read_json, store, layout.JOURNAL_KEY,
                                None)
    except ValueError:      # not JSON, not UTF-8
        return None
    if not isinstance(published, dict):
        return None
    records, heartbeat = published.get('records'), published.get(
        'heartbeat')
    if not isinstance(records, list) \
            or not runner.finite_number(heartbeat) or not all(
                isinstance(r, dict) and runner.finite_number(r.get('t'))
                and isinstance(r.get('event'), str) for r in records):
        return None
    return records, heartbeat, _retrying(published.get('retrying'))


def _retrying(value):
    """The controller's ``retrying`` (:func:`live.loop`'s failing polls)
    if it is one, as one line of at most :data:`ERROR_CHARS`."""
    if not isinstance(value, dict) or \
            not runner.finite_number(value.get('for_s')) or \
            not isinstance(value.get('error'), str) or \
            not isinstance(value.get('failures'), int) or \
            isinstance(value.get('failures'), bool):
        return None
    return {'failures': value['failures'], 'for_s': value['for_s'],
            'error': oneline.escape(value['error'])[:ERROR_CHARS]}


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
        data = store.get(layout.REPORT_KEY + suffix)
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
    except live.CLOUD_ERRORS as exc:
        raise live.CloudError(errors.describe(exc)) from None


def _clean_up(journal, meta, conn, ctl, reason, looks=0):
    """The controller's server goes (:func:`_end`, ``looks``) and its
    credential; (ctl, the server's last state)."""
    settings = live.Settings(**meta['settings'])
    clock = _clock(meta['t0'], settings)
    server_state = _end(journal, clock, conn, ctl, reason, looks,
                        settings.poll_s)
    # Keystone may refuse or fail: the credential stays journalled as
    # live, for the next command to delete.
    if ctl.get('credential') and live._guard(credentials.delete, conn,
                                             ctl['credential']):
        journal.append({'t': clock.now(), 'event': 'credential_delete',
                        'credential': ctl['credential']})
        ctl = dict(ctl, credential=None)
        journal.set_meta(controller=ctl)
    return ctl, server_state


def _end(journal, clock, conn, ctl, reason, looks, every_s):
    """Ask Nova to delete the controller's server unless it shows it
    gone, then look up to ``looks`` more times for it to go; the
    request (``controller_deleting``) and Nova's confirmation
    (``controller_delete``) are journalled.  The server's last state:
    :data:`GONE` once confirmed."""
    state = _server_state(conn, ctl)
    if state == GONE:
        return state
    journal.append({'t': clock.now(), 'event': 'controller_deleting',
                    'server': ctl['server'], 'reason': reason})
    try:
        live._guard(nova.client(conn).servers.delete, ctl['server'])
    except live.CloudError:
        pass    # gone already, or Nova failed: the looks below tell
    state = _wait(lambda: _server_state(conn, ctl), looks, every_s)
    if state == GONE:
        journal.append({'t': clock.now(), 'event': 'controller_delete',
                        'server': ctl['server']})
    return state


def status(jobs_dir, job_id, reports_dir=None, baseline=True):
    """:func:`live.status`, with the controller's view for a job that
    has one (``controller`` in the dict)."""
    view = _view(jobs_dir, job_id, reports_dir=reports_dir)
    st = live.status(jobs_dir, job_id, baseline)
    if view is not None:
        if view['state'] == lifecycle.RUNNING:
            st['status'] = lifecycle.RUNNING
        st['controller'] = view
    return st


def jobs(jobs_dir, reports_dir=None):
    """:func:`live.jobs`, each job that has a controller in the state
    :func:`status` shows (a job its controller drives is running, not
    paused)."""
    return live.jobs(jobs_dir, lambda jobs_dir, job_id, baseline: status(
        jobs_dir, job_id, reports_dir, baseline))


def describe(job_id, view):
    """One line about the controller, for ``status``."""
    if view['taken_back']:
        return 'controller: none any more (the job was taken back here)'
    server, state = view['server'], view['server_state']
    if view['state'] in lifecycle.FINAL + (lifecycle.STOPPED,):
        line = 'controller: server %s %s after the job; credential %s' % (
            server, 'deleted' if state == GONE
            else 'deleting (%s)' % state,
            'deleted' if view['credential_deleted'] else 'not yet deleted')
        if view.get('stopped') not in (None, live.HORIZON_REASON):
            line = ('controller: it stopped the job (%s): opie-bot resume '
                    '%s runs it here; server %s' % (
                        oneline.escape(view['stopped']), job_id,
                        line.split('server ', 1)[1]))
        if view.get('kept'):
            line += ('; the job\'s servers it could not delete keep '
                     'running (%s): opie-bot resume or cancel %s deletes '
                     'them' % (oneline.escape(view['kept']), job_id))
        return line
    if state == GONE:
        return ('controller: server %s is gone and nobody drives the job: '
                'opie-bot resume runs it here, opie-bot cancel deletes its '
                'servers' % server)
    heard = 'last heard %s' % ('never' if view['heard_s'] is None
                               else '%.0f s ago' % view['heard_s'])
    retrying = view.get('retrying')
    if retrying:
        heard += '; retrying for %.0f s (%d failed polls): %s' % (
            retrying['for_s'], retrying['failures'], retrying['error'])
    if state in ALIVE:
        return 'controller: server %s %s, %s' % (server, state, heard)
    return ('controller: server %s %s: it may still drive the job (Nova '
            'has not deleted it), %s; opie-bot resume deletes it and runs '
            'the job here once Nova shows it gone, opie-bot cancel deletes '
            'it and the job\'s servers' % (server, state, heard))


def take_back(jobs_dir, job_id, cloud=None):
    """Before a local ``resume``: refuse while the controller is at
    work; otherwise fence it (:func:`_fence`), so that the job has one
    driver again: this machine."""
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


def _fence(jobs_dir, job_id, cloud, reason):
    """Make sure the controller can act no more before the tenant's side
    drives the job or takes it back (the design's *The controller*): its
    server gone in Nova, after a delete and a bounded wait if needed, and
    its credential deleted.  A server still there is refused (``ValueError``,
    one line): nothing is driven beside it."""
    conn = _cloud(jobs_dir, job_id, cloud)
    journal, meta, _ = _locked(jobs_dir, job_id)
    try:
        settings = live.Settings(**meta['settings'])
        ctl = _sync(journal, meta, settings, conn, None)
        ctl, state = _clean_up(journal, meta, conn, ctl, reason, WAIT_POLLS)
        if state != GONE:
            raise ValueError('job %s: controller server %s still exists '
                             '(%s); try again' % (job_id, ctl['server'],
                                                  state))
        journal.set_meta(controller=dict(ctl, taken_back=True))
    finally:
        journal.close()


def cancel(jobs_dir, job_id, cloud=None, say=print):
    """Before the tenant's ``cancel`` deletes what the journal shows: a
    controller at work is asked to cancel and given time to do it (its
    journal knows its last servers); then it is fenced, whatever it did.
    """
    conn = _cloud(jobs_dir, job_id, cloud)
    view = _view(jobs_dir, job_id, conn, _reports(jobs_dir))
    if view is None or view['taken_back']:
        return
    journal, meta, _ = live._load(jobs_dir, job_id)
    journal.close()
    settings = live.Settings(**meta['settings'])
    if view['server_state'] in ALIVE and view['state'] not in \
            lifecycle.FINAL:
        store, _ = stores.open_store(settings.store, job_id, conn,
                                     create=False)
        agent.write_json(store, layout.CANCEL_KEY,
                         {'requested_at': time.time()})
        say('job %s: cancel requested; waiting for controller server %s '
            'to stop' % (job_id, view['server']))
        _wait(lambda: _server_state(conn, meta['controller']), WAIT_POLLS,
              settings.poll_s)
    _fence(jobs_dir, job_id, cloud, 'cancel')


def _wait(state, looks, every_s):
    """Call ``state`` until it answers :data:`GONE`, at most ``looks``
    more times after the first, a pause of ``every_s`` (at least
    :data:`MIN_WAIT_EVERY_S`) between two; its last answer.  Looks are
    counted, not timed: a wait is the same on any clock."""
    last = state()
    for _ in range(looks):
        if last == GONE:
            break
        _pause(max(every_s, MIN_WAIT_EVERY_S))
        last = state()
    return last


def _now():
    """The tenant's clock (``heard_s``): never compared with the
    controller's."""
    return time.time()


def _pause(seconds):
    time.sleep(seconds)
