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

"""The controller server's own loop: the job's client on a server.

:func:`main` runs the job as ``run --backend openstack`` would
(:mod:`opie.bot.openstack.live`), publishing its journal to the job's
store, and deletes its own server whatever ends the run
(:mod:`opie.bot.controller` describes both sides).
"""
import json
import os
import sys
import time

from novaclient import exceptions as nova_exc
import yaml

from opie.bot import agent
from opie.bot.controller import layout
from opie.bot.job import jobfile
from opie.bot.openstack import clock as clock_mod
from opie.bot.openstack import live
from opie.bot.openstack import nova
from opie.bot.openstack import stores
from opie.bot.report import html_page
from opie.bot.sim import map_choice
from opie.bot.state import datadir
from opie.bot.state import journal as journal_mod

# Records published before the controller acts on them.
AT_ONCE = ('server_creating',)
# Records that end the job: published only once the report is in the
# store, so that the tenant's side, which deletes a finished job's
# controller, never deletes it while it writes the report.
LAST = ('done', 'stopped')


class CancelRequested(Exception):
    """The tenant asked the controller to cancel the job."""


class Publisher:
    """Publishes the controller's journal to the job's store, as the
    journal commits it, with a heartbeat (its own clock's time: a value
    that grows, which the tenant's side compares with nothing but the
    last one it read) and, while polls fail, ``retrying``; and reads the
    tenant's cancel request there.  Until :attr:`final`, the records
    from the job's end (:data:`LAST`) on are held back."""

    def __init__(self, store):
        self.store = store
        self.records = []
        self.final = False
        self.retrying = None

    def record(self, record):
        self.records.append(record)
        if record['event'] in AT_ONCE:
            self.publish()

    def publish(self):
        records = self.records
        if not self.final:
            ends = [i for i, r in enumerate(records) if r['event'] in LAST]
            records = records[:ends[0]] if ends else records
        published = {'records': records, 'heartbeat': time.time()}
        if self.retrying and not self.final:
            published['retrying'] = self.retrying
        agent.write_json(self.store, layout.JOURNAL_KEY, published)

    def tick(self, retrying=None):
        """At every poll: publish (with ``retrying``, the loop's failing
        polls, if any), then stop if asked to (whatever the request
        holds).  A store that fails is asked again at the next poll, as
        the loop retries its own calls: one error of Swift must not end
        the only client of the job."""
        self.retrying = retrying
        try:
            self.publish()
            asked = self.store.get(layout.CANCEL_KEY) is not None
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
    """Run the job of ``config`` to its end, then delete this server.
    Whatever ends the run (the job's end or horizon, a cancel, an error
    even before it drives), the controller publishes why and deletes its
    server: it never idles on."""
    home = workdir or os.environ.get('HOME') or os.getcwd()
    root = os.path.join(home, 'opie-bot')
    os.makedirs(root, mode=0o700, exist_ok=True)
    clouds_yaml = os.path.join(root, 'clouds.yaml')
    fd = os.open(clouds_yaml, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
        yaml.safe_dump({'clouds': {layout.CLOUD: config['cloud']}}, f)
    os.environ['OS_CLIENT_CONFIG_FILE'] = clouds_yaml
    settings = live.Settings(**config['settings'])
    job_id = config['job_id']
    # Without the cloud or the store there is no one to tell: the
    # traceback goes to the console log.
    conn = live._connect(settings)
    store, _ = stores.open_store(settings.store, job_id, conn, create=False)
    jobs_dir = datadir.jobs(root)
    publisher = Publisher(store)
    ctx = own = None
    try:
        plan = map_choice.primary_map(jobfile.parse(config['job_source'],
                                                    config['job_path']))
        ctx = live.start(plan, config['job_path'], settings, jobs_dir,
                         say=_console, source=config['job_source'],
                         job_id=job_id, t0=config['t0'],
                         watch=publisher.record,
                         inputs=agent.read_json(store, layout.INPUTS_KEY,
                                                None))
        # Published at every poll (progress every 0 s), never giving up.
        live.loop(ctx, lambda snapshot: publisher.tick(ctx.failing), 0.0,
                  patient=True)
    except CancelRequested:
        ctx.journal.close()
        ctx = None
        try:
            # The cancel deletes it.
            own = agent.read_json(store, layout.SERVER_KEY)
            # Results and this journal stay for the tenant's side, whose
            # own cancel deletes them if asked.
            live.cancel(jobs_dir, job_id, layout.CLOUD)
        except Exception as exc:
            # Its records show the cancel begun: the tenant's finishes it.
            _console('cancel cut short: %s: %s' % (type(exc).__name__, exc))
        # The cancel's records too (its own journal): the tenant's side
        # must see a cancelled job even if it did not wait for it.
        publisher.records = _records(jobs_dir, job_id)
    except Exception as exc:
        publisher.records = _stop(ctx, config, settings, conn, jobs_dir,
                                  'controller error: %s: %s' % (
                                      type(exc).__name__, exc))
    if ctx is not None:
        _report(ctx, store)
    # The last word, then this server goes: the tenant's side reads the
    # one, Nova ends the other (and this process with it).
    publisher.final = True
    publisher.publish()
    own = own or agent.read_json(store, layout.SERVER_KEY)
    if own is not None and _is_own(conn, own['server'], job_id):
        nova.client(conn).servers.delete(own['server'])


def _report(ctx, store):
    """The job's report, into the store, for the tenant's side."""
    try:
        rep = live.build_report(ctx)
        store.put(layout.REPORT_KEY + '.json',
                  json.dumps(rep, indent=1).encode())
        store.put(layout.REPORT_KEY + '.html', html_page.render(rep).encode())
    except Exception as exc:    # the job is over all the same
        _console('no report: %s: %s' % (type(exc).__name__, exc))
    finally:
        ctx.journal.close()


def _stop(ctx, config, settings, conn, jobs_dir, reason):
    """Stop the job the controller cannot go on with (:func:`live.stop`,
    from its journal, which a start cut short may not have made): the
    records to publish, ending with ``stopped`` and, if the cloud kept
    servers, ``servers_kept`` with why."""
    _console(reason)
    clock = clock_mod.RealClock(config['t0'], settings.speed)
    path = journal_mod.path_for(jobs_dir, config['job_id'])
    if ctx is None and not os.path.exists(path):
        return [{'t': clock.now(), 'event': 'stopped', 'reason': reason,
                 'servers': 0}]
    journal = ctx.journal if ctx is not None else journal_mod.Journal(path)
    try:
        if ctx is None:
            journal.lock()
        job = jobfile.parse(config['job_source'], config['job_path'])
        try:
            live.stop(journal, job, conn, settings, clock, reason)
        except live.CloudError as exc:
            journal.append({'t': clock.now(), 'event': 'servers_kept',
                            'reason': str(exc)})
        return journal.records()
    finally:
        if ctx is None:
            journal.close()


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
