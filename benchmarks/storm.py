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

"""Boot storm in the lab: OPIE on a full cloud against stock Nova on an
empty one, same lab, same run (issue 14).

What is measured: the wall time for K normal servers, booted at once, to
be accepted (Nova's API has answered every request), placed (Nova's API
shows a host for every server: the conductor has written the scheduler's
choice to the cell), ACTIVE, and done end to end: ACTIVE with their
victims gone (deleted, or shelved and offloaded: no longer running), in
two phases run one after the other on the same running lab (``python3
tools/lab.py up``):

* stock: the lab's ``opie-scheduler`` services are replaced by Nova's own
  ``nova-scheduler``, started the same way (two services as on two
  controllers, ``[scheduler] workers = 2`` each, the same nova.conf) plus
  a file that puts back Nova's default ``enabled_filters`` and
  ``weight_classes``: the baseline is Nova as shipped, without OPIE's
  filter and weighers (on an empty cloud OPIE's filter, in its safe mode
  under the stock manager, would pass the same hosts; only its cost would
  be left in). The cloud is empty.
* OPIE: the ``opie-scheduler`` services are back, as the lab runs them.
  Alpha fills every compute with small preemptible servers, one per vCPU
  (each host is then full in vCPU, memory and disk), so each of the K
  small normal servers needs exactly one preemption.

The storm: beta boots K ``small`` servers at once, K threads each sending
one ``POST /servers`` with its own already-authenticated novaclient (many
independent requests, as many users booting at once, not one
multi-create request). The clock starts before the first request; one
admin server list every 0.2 s records when each server first has a host
and first is ACTIVE, and when each fill server is first gone, and a
storm's times are those of its last server (on the empty stock cloud
there are no victims: done is ACTIVE).
The lab's nova-api and keystone are one gunicorn worker each and every
boot checks keystone's unified limits (in the API and again in the
conductor), so much of a storm's time is spent before and around the
scheduler, the same in both phases: "accepted" shows that share.
A server in ERROR fails the run. The preemptions counted are the fill
servers with an ``opie-preempt`` instance action. After each storm every
server is deleted and the next step waits until Placement holds no
allocation on any compute.

Schedulers are ready when RabbitMQ counts a consumer on the ``scheduler``
queue for each of their workers; each phase then starts with an untimed
warm-up storm of one server per worker. K defaults to
computes x (vCPUs - 1); with ``--rounds R`` each phase runs R storms
(stock ones first) and the medians are compared.

Goal: the figure and its ratio OPIE/stock for the closing note; no bound
is set (for one request, benchmarks/scheduler.py holds OPIE on a full
cloud to 1.5 times stock on an empty one).

Run from the repository root against a running lab, in the lab's venv::

    python3 tools/lab.py storm [--servers K] [--rounds R]

It deletes every server of the lab first and leaves the lab with its
``opie-scheduler`` services and no server. Exit codes: 0 done, 1 a storm
failed (the message says why), 2 the lab is not up.
"""
import argparse
from concurrent import futures
import statistics
import sys
import time

import kombu
from nova.conf import scheduler as nova_scheduler_conf
from novaclient import client as nova_client

from opie.core import preemptible
from opie.lab import cli
from opie.lab import configs
from opie.lab import settings
from opie.testing import lab

WORKERS = settings.SCHEDULERS * settings.SCHEDULER_WORKERS
POLL_SECONDS = 0.2
FLAVOR = 'small'
# A victim in these states no longer runs: its room is free on the host.
STOPPED = ('SHELVED', 'SHELVED_OFFLOADED', 'DELETED', 'SOFT_DELETED')


def _stock_conf():
    """The file that gives nova-scheduler Nova's default filters and
    weighers, as before ``opie-manage nova-conf``."""
    defaults = {opt.name: ','.join(opt.default)
                for opt in nova_scheduler_conf.filter_scheduler_opts
                if opt.name in ('enabled_filters', 'weight_classes')}
    path = lab.LAB.etc / 'nova' / 'nova-stock-scheduler.conf'
    configs.write_ini(path, {'filter_scheduler': defaults})
    return path


def _consumers():
    # oslo.messaging's rabbit:// is AMQP 0-9-1, kombu's amqp://.
    url = lab.LAB.transport_url.replace('rabbit:', 'amqp:', 1)
    with kombu.Connection(url) as conn:
        return conn.default_channel.queue_declare(
            'scheduler', passive=True).consumer_count


def _schedulers(binary, *extra):
    """Run ``binary``'s services instead of the current ones."""
    cli.restart_schedulers(lab.LAB, *extra, binary=binary)
    lab.wait_for('%d %s workers' % (WORKERS, binary),
                 lambda: _consumers() == WORKERS)


def _warm_up():
    """A server for each scheduler worker, untimed."""
    _storm(WORKERS)
    _clear()


def _clear():
    """No server, and no server's allocation on any compute (OPIE's
    host tokens stay)."""
    lab.delete_all()
    lab.wait_for('Placement to free every compute', lambda: not any(
        used for classes in lab.usages_and_capacity().values()
        for rc, (used, _) in classes.items()
        if rc != preemptible.HOST_TOKEN))


def _client(cloud):
    session = lab.session(cloud)
    session.get_token()
    return nova_client.Client(lab.NOVA_VERSION, session=session)


def _storm(count, fill=()):
    """Boot ``count`` small servers of beta at once; seconds until Nova's
    API has accepted them all, until all have a host, until all are
    ACTIVE, and until, besides, ``count`` of the ``fill`` servers are gone
    (each storm server displaces one of them)."""
    clients = [_client('lab-beta') for _ in range(count)]
    flavor = clients[0].flavors.find(name=FLAVOR)
    image = clients[0].glance.find_image(lab.IMAGE)
    admin = lab.nova('lab-admin')
    placed, active, gone = {}, {}, {}
    victims = count if fill else 0

    def boot(index):
        return clients[index].servers.create(
            'storm-%d' % index, image, flavor, nics='none').id
    with futures.ThreadPoolExecutor(count) as pool:
        t0 = time.monotonic()
        ids = list(pool.map(boot, range(count)))
        accepted = time.monotonic() - t0

    def done():
        now = time.monotonic() - t0
        listed = admin.servers.list(search_opts={'all_tenants': 1})
        for server in listed:
            if server.id not in ids:
                continue
            if server.status == 'ERROR':
                raise AssertionError('server %s went to ERROR: %s' % (
                    server.id, getattr(server, 'fault', {})))
            if getattr(server, 'OS-EXT-SRV-ATTR:host'):
                placed.setdefault(server.id, now)
            if server.status == 'ACTIVE':
                active.setdefault(server.id, now)
        running = {s.id for s in listed if s.status not in STOPPED}
        for server_id in fill:
            if server_id not in running:
                gone.setdefault(server_id, now)
        return len(active) == count and len(gone) >= victims
    lab.wait_for('%d servers to be ACTIVE and %d victims gone'
                 % (count, victims), done, interval=POLL_SECONDS)
    ended = max(list(active.values()) + list(gone.values()))
    return accepted, max(placed.values()), max(active.values()), ended


def _fill():
    """Alpha's small preemptibles on every vCPU; their ids."""
    alpha = lab.nova('lab-alpha')
    ids = lab.boot(alpha, 'fill', 'small-preemptible',
                   count=settings.COMPUTE_SIZE[0] * lab.LAB.computes)
    states = {s.status for s in lab.settled(set(ids)).values()}
    if states != {'ACTIVE'}:
        raise AssertionError('filling the cloud left servers %s' % states)
    for host, classes in lab.usages_and_capacity().items():
        used, total = classes['CUSTOM_PREEMPTIBLE_VCPU'][0], classes[
            'VCPU'][1]
        if used != total:
            raise AssertionError('%s: %d of %d vCPUs preemptible after the '
                                 'fill' % (host, used, total))
    return ids


def _preempted(ids):
    actions = lab.nova('lab-admin', '2.21').instance_action
    return sum('opie-preempt' in [a.action for a in actions.list(i)]
               for i in ids)


def run(count, rounds):
    """{'stock': [times, ...], 'opie': [times + (preemptions,), ...]},
    one tuple a round (times: see :func:`_storm`)."""
    results = {'stock': [], 'opie': []}
    _clear()
    try:
        _schedulers('nova-scheduler', _stock_conf())
        _warm_up()
        for _ in range(rounds):
            results['stock'].append(_storm(count))
            _clear()
    finally:
        _clear()
        _schedulers('opie-scheduler')
    try:
        _warm_up()
        for _ in range(rounds):
            fill = _fill()
            times = _storm(count, fill)
            results['opie'].append(times + (_preempted(fill),))
            _clear()
    finally:
        _clear()
    return results


def report(count, results):
    print('Boot storm, OPIE lab: %d small normal servers at once, %d '
          'computes x %d vCPUs, %d scheduler services x %d workers' % (
              count, lab.LAB.computes, settings.COMPUTE_SIZE[0],
              settings.SCHEDULERS, settings.SCHEDULER_WORKERS))
    row = '%-27s %9s %9s %9s %9s  %-20s %s'
    print(row % ('seconds (median of rounds)', 'accepted', 'placed',
                 'active', 'done', 'done, each round', 'preemptions'))
    medians = {}
    for phase, title in (('stock', 'stock Nova, empty cloud'),
                         ('opie', 'OPIE, full of preemptibles')):
        rounds = results[phase]
        medians[phase] = [statistics.median(r[i] for r in rounds)
                          for i in range(4)]
        print(row % ((title,) + tuple('%.2f' % m for m in medians[phase])
                     + (' '.join('%.2f' % r[3] for r in rounds),
                        ' '.join(str(r[4]) for r in rounds)
                        if phase == 'opie' else '-')))
    print((row % (('OPIE / stock',) + tuple(
        '%.2f' % (o / s) for o, s in zip(medians['opie'], medians['stock']))
        + ('', ''))).rstrip())
    print('done: every server ACTIVE and, for OPIE, as many victims gone '
          '(deleted or shelved) as servers booted')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--servers', type=int, metavar='K',
                        help='servers per storm (default: computes x '
                        '(vCPUs - 1))')
    parser.add_argument('--rounds', type=int, default=1, metavar='R',
                        help='storms per phase (default %(default)s)')
    args = parser.parse_args()
    why = lab.require_up()
    if why:
        print('storm: %s' % why, file=sys.stderr)
        return 2
    vcpus = settings.COMPUTE_SIZE[0] * lab.LAB.computes
    count = args.servers or vcpus - lab.LAB.computes
    if not 1 <= count <= vcpus or args.rounds < 1:
        parser.error('--servers must be 1 to %d (the vCPUs of the lab), '
                     '--rounds 1 or more' % vcpus)
    try:
        results = run(count, args.rounds)
    except AssertionError as exc:
        print('storm: %s' % exc, file=sys.stderr)
        return 1
    report(count, results)
    return 0


if __name__ == '__main__':
    sys.exit(main())
