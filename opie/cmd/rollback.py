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

"""``opie-manage rollback``: take OPIE out of a cloud, computes kept up.

What OPIE puts into Placement outlives OPIE: each compute node's host
token (a consumer of project ``opie-host-token`` holding the node's one
unit of ``CUSTOM_OPIE_HOST``, :mod:`opie.nova.request.cas`), the reconciler's
lease (a consumer of ``CUSTOM_OPIE_LEASE`` on the provider
``opie-coordination``, :mod:`opie.nova.periodic.leader`), the
``CUSTOM_PREEMPTIBLE_*`` and ``CUSTOM_OPIE_HOST`` inventories of the provider
configs, and those custom resource classes. A nova-compute restarted without
its provider config while its token, or a preemptible server, still uses them
does not start: its resource tracker cannot remove inventory in use (issue 24).
So, in this order::

    opie-manage rollback --os-cloud admin --config-file /etc/nova/nova.conf \\
        --preemptibles delete [--dry-run]

1. It refuses while an OPIE scheduler may still run, as its heartbeat
   file shows (``--heartbeat-file``, or ``[opie] heartbeat_path`` of
   ``--config-file``; ``--force`` if the operator knows better): a token
   removed under a running opie-scheduler lets it write without its
   compare-and-swap, and it writes the tokens and the lease back.
2. It refuses while preemptible servers hold the preemptible classes,
   unless told what to do with them (``--preemptibles``): ``delete`` or
   ``shelve`` them and wait until Placement has let them go, or ``keep``
   them, with their computes' provider configs and inventories (then
   OPIE's filter stays in the schedulers' nova.conf: ``keep`` with
   ``--config-file`` is refused).
3. It removes the host tokens, the lease, the coordination provider, the
   preemption budgets' ledgers with their charges
   (:mod:`opie.nova.request.ledger`), the OPIE inventories nobody uses, and the
   resource classes nobody has.
4. With ``--config-file``, it removes OPIE's settings from that scheduler
   nova.conf, as ``opie-manage nova-conf scheduler --remove`` does, once
   no preemptible server is left (safe mode needs OPIE's filter).

The heartbeats are checked again right before step 3: the drain may take
minutes. Each server is read again in Placement just before it is deleted
or shelved, and spared if it no longer holds preemptible classes (its
owner resized it to a normal flavor).

Each thing done is one line, each thing left one line ``left: WHAT: WHY``.
Running it again is harmless. Exit codes: 0 nothing of OPIE is left, 1
something is (listed), 2 refused or bad input (one line).
"""
import dataclasses
import datetime
import math
import time

from oslo_config import cfg

from opie import arguments
from opie import oneline
from opie.cmd import errors
from opie.cmd import nova_conf
from opie.cmd import nova_conf_command
from opie.cmd import options
from opie.core import preemptible
from opie.nova.periodic import heartbeat
from opie.nova.periodic import leader
from opie.nova.request import cas
from opie.nova.request import ledger

EXIT_LEFT = 1
DELETE, SHELVE, KEEP = 'delete', 'shelve', 'keep'
# Nova's status of a server shelved but not offloaded: it still holds its
# allocations.
SHELVED = 'SHELVED'
PAST = {'remove': 'removed', DELETE: 'deleted', SHELVE: 'shelved'}
# Every resource class OPIE creates.
CLASSES = preemptible.PROVIDER_CONFIG_CLASSES + (leader.RESOURCE_CLASS,
                                                 ledger.RESOURCE_CLASS)
# Seconds between two looks at Placement while servers leave.
POLL_SECONDS = 2
DEFAULT_TIMEOUT = 600


def register(subparsers):
    parser = subparsers.add_parser(
        'rollback', help='remove OPIE from Placement (and a scheduler '
        'nova.conf) without taking computes down',
        description='Remove what OPIE put into Placement: host tokens, the '
        'reconciler lease, the opie-coordination provider, unused '
        'preemptible and host token inventories, unused resource classes; '
        'with --config-file, OPIE\'s settings of that scheduler nova.conf. '
        'Run it once every scheduler runs the stock nova-scheduler (see '
        'the rollback procedure). Exit codes: 0 nothing of OPIE left, 1 '
        'something left (listed), 2 refused or bad input.')
    parser.add_argument(
        '--preemptibles', choices=(DELETE, SHELVE, KEEP),
        help='what to do with the preemptible servers still running: '
        'delete or shelve (and offload) them, or keep them with their '
        "computes' provider configs; refused while some run without it")
    parser.add_argument(
        '--timeout', type=arguments.whole_number(0), default=DEFAULT_TIMEOUT,
        metavar='SECONDS', help='how long to wait for deleted or shelved '
        'servers to leave Placement (default %d)' % DEFAULT_TIMEOUT)
    schedulers = parser.add_mutually_exclusive_group()
    schedulers.add_argument(
        '--heartbeat-file', action='append', default=[], metavar='PATH',
        help="an OPIE scheduler's heartbeat file ([opie] heartbeat_path; "
        'repeatable): refused while one is alive')
    schedulers.add_argument(
        '--force', action='store_true',
        help='no heartbeat check: every scheduler already runs the stock '
        'nova-scheduler')
    parser.add_argument(
        '--config-file', metavar='PATH',
        help="a scheduler's nova.conf: its heartbeat is checked and OPIE's "
        'settings removed from it, as by nova-conf scheduler --remove')
    parser.add_argument('--config-dir', metavar='DIR',
                        help="that service's --config-dir (nova.conf.d)")
    parser.add_argument('--dry-run', action='store_true',
                        help='change nothing, say what would be done')
    options.add_cloud_arguments(parser)
    parser.set_defaults(func=command)


@dataclasses.dataclass
class Node:
    """A compute node's resource provider as Placement holds it."""
    name: str
    uuid: str
    inventories: dict   # resource class -> inventory
    consumers: dict     # consumer uuid -> {resource class: amount}

    def preemptible(self):
        """The consumers holding preemptible classes here."""
        return sorted(uuid for uuid, resources in self.consumers.items()
                      if set(resources) & set(preemptible.CUSTOM))

    def users(self, resource_class):
        return [uuid for uuid, resources in self.consumers.items()
                if resource_class in resources]


class Report:
    """One line for each thing done (or, in a dry run, to do) and each
    thing left."""

    def __init__(self, dry_run):
        self.dry_run = dry_run
        self.left = []

    def act(self, verb, what):
        print('%s %s' % ('would %s' % verb if self.dry_run else PAST[verb],
                         what))

    def leave(self, what, why):
        self.left.append(what)
        print('left: %s: %s' % (what, why))

    def finish(self):
        if not self.left:
            print('%snothing of OPIE is left in Placement'
                  % ('dry run: ' if self.dry_run else ''))
            return 0
        print('%s%s of OPIE left, see above' % (
            'dry run: ' if self.dry_run else '', _count(
                len(self.left), 'thing')))
        return EXIT_LEFT


def command(args):
    if args.config_dir is not None and args.config_file is None:
        raise errors.UsageError('--config-dir goes with --config-file')
    paths = list(args.heartbeat_file)
    if args.config_file is not None:
        paths.append(_heartbeat_path(args))
    if not args.force:
        check_schedulers(paths,
                         datetime.datetime.now(datetime.timezone.utc))
    # Only now: the cloud clients take most of opie-manage's start-up.
    from opie.cmd import cloud
    report = Report(args.dry_run)
    with cloud.errors_as_usage():
        conn = cloud.connect(args)
        nodes = read_nodes(conn)
        check_preemptibles(nodes, args.preemptibles, args.config_file)
        if args.preemptibles in (DELETE, SHELVE):
            nodes = drain(conn, nodes, args.preemptibles, args.timeout,
                          report)
        if not args.force:
            # Again, right before the tokens go: the drain may have taken
            # --timeout seconds, time enough for an opie-scheduler to be
            # started again (configuration management, another operator).
            check_schedulers(paths,
                             datetime.datetime.now(datetime.timezone.utc))
        remove(conn, nodes, report)
    if args.config_file is not None:
        remove_config(args, nodes, report)
    return report.finish()


def _heartbeat_path(args):
    """``[opie] heartbeat_path`` of the scheduler nova.conf of ``args``.

    Only that option is read: the others of ``[opie]`` go anyway.
    """
    conf = nova_conf.load([args.config_file], args.config_dir,
                          check_opie=False)
    try:
        return conf.opie.heartbeat_path
    except cfg.Error as exc:
        raise errors.UsageError('%s: [opie] heartbeat_path: %s' % (
            nova_conf.where(conf), ' '.join(str(exc).split()))) from None


def check_schedulers(paths, now):
    """Refuse while the heartbeat of one of ``paths`` is alive, or none is
    given: a token removed under a running opie-scheduler lets it write
    without its compare-and-swap."""
    if not paths:
        raise errors.UsageError(
            'cannot tell whether opie-scheduler still runs: give the '
            'heartbeat file of every scheduler host (--heartbeat-file, or '
            '--config-file) or, once every one runs the stock '
            'nova-scheduler, --force')
    for path in paths:
        beat = heartbeat.read(path)
        if beat is None:
            raise errors.UsageError(
                'no heartbeat in %s: cannot tell whether opie-scheduler '
                'still runs (give its [opie] heartbeat_path, or --force)'
                % path)
        interval = beat.get('interval') if isinstance(beat, dict) else None
        age = heartbeat.age(beat, now)
        dead_after = (heartbeat.ALIVE_INTERVALS * interval
                      if _positive(interval) else None)
        # Two intervals of 1e308 seconds are no time a beat can be
        # judged by.
        if age is None or dead_after is None or not math.isfinite(
                dead_after):
            raise errors.UsageError('heartbeat %s has no valid "time" or '
                                    '"interval" (--force to go on)' % path)
        if age < dead_after:
            raise errors.UsageError(
                'opie-scheduler still runs on %s: its heartbeat %s is %d s '
                'old (interval %d s); run the stock nova-scheduler on every '
                'scheduler host first (rollback step 2), then try again '
                'once it is %d s old' % (beat.get('host'), path, age,
                                         interval, dead_after))


def read_nodes(conn):
    """Every compute node's provider: inventories and consumers."""
    nodes = []
    for hypervisor in conn.compute_nodes():
        allocations = conn.placement_get(
            '/resource_providers/%s/allocations' % hypervisor.id)
        nodes.append(Node(
            hypervisor.hypervisor_hostname, hypervisor.id,
            conn.inventories(hypervisor.id) or {},
            {uuid: held['resources'] for uuid, held in
             (allocations or {}).get('allocations', {}).items()}))
    return nodes


def check_preemptibles(nodes, what, config_file):
    """Refuse while preemptible servers run, unless ``what`` says what to
    do with them; refuse to keep them and remove OPIE's filter."""
    busy = [node for node in nodes if node.preemptible()]
    if not busy:
        return
    count = sum(len(node.preemptible()) for node in busy)
    running = '%s on %s' % (
        _count(count, 'preemptible server', 'still runs', 'still run'),
        ', '.join(node.name for node in busy))
    if what is None:
        raise errors.UsageError(
            '%s: drain them first, or give --preemptibles delete, shelve or '
            'keep' % running)
    if what == KEEP and config_file is not None:
        raise errors.UsageError(
            '--preemptibles keep with --config-file: %s; OPIE\'s filter '
            'must stay in nova.conf (safe mode) and their computes keep '
            'their provider configs, or nova-compute does not start: run '
            'without --config-file' % running)


def drain(conn, nodes, verb, timeout, report):
    """Delete or shelve every preemptible server; the nodes once Placement
    has let them go (or ``timeout`` seconds passed)."""
    acted = set()
    for node in nodes:
        for uuid in node.preemptible():
            if _drain_one(conn, node, uuid, verb, report):
                acted.add(uuid)
    if report.dry_run:
        for node in nodes:
            for uuid in acted & set(node.consumers):
                del node.consumers[uuid]
        return nodes
    return _wait_gone(conn, acted, verb == SHELVE, timeout)


def _drain_one(conn, node, uuid, verb, report):
    """Delete or shelve server ``uuid``: whether it will leave."""
    server = conn.server(uuid)
    if server is None:
        return False  # not a server (a migration): left, with its inventory
    if not _holds_preemptible(conn, uuid):
        # Its owner resized it to a normal flavor (or deleted it, or it
        # moved) since the node was read: not the rollback's any more.
        return False
    # The name is its owner's: escaped, so it cannot forge a line.
    what = 'preemptible server %s (%s) on %s' % (
        oneline.escape(server.name), uuid, node.name)
    if verb == SHELVE and server.status == SHELVED:
        return True   # shelved by an earlier run: offloaded below
    report.act(verb, what)
    if report.dry_run:
        return True
    refusal = conn.server_action(verb, uuid)
    if refusal is not None:
        report.leave(what, 'Nova refused to %s it: %s' % (
            verb, oneline.escape(refusal)))
        return False
    return True


def _holds_preemptible(conn, uuid):
    """Whether consumer ``uuid`` holds preemptible classes anywhere, read
    now: the listing it was found in may be minutes old."""
    held = conn.placement_get('/allocations/%s' % uuid) or {}
    return any(set(allocation.get('resources', {})) & set(preemptible.CUSTOM)
               for allocation in (held.get('allocations') or {}).values())


def _wait_gone(conn, uuids, offload, timeout):
    """The nodes once none of ``uuids`` holds anything (shelved servers
    offloaded, whatever ``shelved_offload_time`` says), or at
    ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        nodes = read_nodes(conn)
        holding = uuids & {uuid for node in nodes for uuid in node.consumers}
        if not holding or time.monotonic() >= deadline:
            return nodes
        if offload:
            _offload(conn, holding)
        time.sleep(POLL_SECONDS)


def _offload(conn, uuids):
    """Offload the shelved ones of ``uuids``; one Nova refuses (busy) is
    tried again at the next look."""
    for uuid in uuids:
        server = conn.server(uuid)
        if server is not None and server.status == SHELVED:
            conn.server_action('shelve_offload', uuid)


def remove(conn, nodes, report):
    """Everything of OPIE's in Placement that nothing else uses, in the
    order Placement allows: consumers, then inventories and providers,
    then resource classes."""
    for node in nodes:
        _remove_token(conn, node, report)
    _remove_lease(conn, report)
    _remove_ledgers(conn, report)
    for node in nodes:
        _remove_inventories(conn, node, report)
    _remove_classes(conn, nodes, report)


def _remove_token(conn, node, report):
    consumer = cas.consumer(node.uuid)
    if consumer not in node.consumers:
        return
    report.act('remove', 'host token of compute node %s (consumer %s)'
               % (node.name, consumer))
    if not report.dry_run:
        conn.placement_delete('/allocations/%s' % consumer)
    del node.consumers[consumer]


def _remove_lease(conn, report):
    held = conn.placement_get('/allocations/%s' % leader.CONSUMER_UUID)
    if held and held.get('allocations'):
        report.act('remove', 'reconciler lease (consumer %s, held by %s)'
                   % (leader.CONSUMER_UUID, held.get('user_id')))
        if not report.dry_run:
            conn.placement_delete('/allocations/%s' % leader.CONSUMER_UUID)
    url = '/resource_providers/%s' % leader.PROVIDER_UUID
    if conn.placement_get(url) is None:
        return
    report.act('remove', 'resource provider %s (%s)'
               % (leader.PROVIDER_NAME, leader.PROVIDER_UUID))
    if report.dry_run:
        return
    if conn.placement_delete(url) is False:
        report.leave('resource provider %s' % leader.PROVIDER_NAME,
                     'an opie-scheduler took the lease again: it still '
                     'runs somewhere')


def _remove_ledgers(conn, report):
    """The preemption budgets' ledgers (:mod:`opie.nova.request.ledger`): their
    charges, then the providers, then their traits."""
    traits = (conn.placement_get(ledger.TRAITS_URL) or {}).get('traits', [])
    found = {}
    if ledger.TRAIT in traits:
        found = conn.placement_get('/resource_providers?required=%s'
                                   % ledger.TRAIT) or {}
    for provider in found.get('resource_providers', ()):
        url = '/resource_providers/%s' % provider['uuid']
        held = conn.placement_get(url + '/allocations') or {}
        what = 'preemption budget ledger %s (%s)' % (provider['name'],
                                                     provider['uuid'])
        report.act('remove', '%s and its %d charge(s)' % (
            what, len(held.get('allocations', {}))))
        if report.dry_run:
            continue
        for consumer in held.get('allocations', {}):
            conn.placement_delete('/allocations/%s' % consumer)
        if conn.placement_delete(url) is False:
            report.leave(what, 'charged again meanwhile: an opie-scheduler '
                         'still runs somewhere')
    for name in sorted(traits):
        report.act('remove', 'trait %s' % name)
        if not report.dry_run and conn.placement_delete(
                '/traits/%s' % name) is False:
            report.leave('trait %s' % name, 'a ledger has it again')


def _remove_inventories(conn, node, report):
    ours = [name for name in preemptible.PROVIDER_CONFIG_CLASSES
            if name in node.inventories]
    used = [name for name in ours if node.users(name)]
    if used:
        report.leave(
            '%s inventory of compute node %s' % (', '.join(used), node.name),
            '%s it: keep its provider config, or nova-compute does not '
            'start' % _count(len({uuid for name in used
                                  for uuid in node.users(name)}),
                             'consumer', 'uses', 'use'))
    free = [name for name in ours if name not in used]
    if not free:
        return
    report.act('remove', '%s inventory of compute node %s (a nova-compute '
               'still given its provider config puts it back)'
               % (', '.join(free), node.name))
    for name in free:
        if not report.dry_run:
            if conn.placement_delete('/resource_providers/%s/inventories/'
                                     '%s' % (node.uuid, name)) is False:
                report.leave('%s inventory of compute node %s'
                             % (name, node.name), 'used since it was read')
                continue
        del node.inventories[name]


def _remove_classes(conn, nodes, report):
    for name in CLASSES:
        if conn.placement_get('/resource_classes/%s' % name) is None:
            continue
        holders = [node.name for node in nodes if name in node.inventories]
        if holders:
            report.leave('resource class %s' % name, 'inventory of it is '
                         'left on %s' % ', '.join(holders))
            continue
        report.act('remove', 'resource class %s' % name)
        if report.dry_run:
            continue
        if conn.placement_delete('/resource_classes/%s' % name) is False:
            report.leave('resource class %s' % name,
                         'a provider has inventory of it again (a '
                         'nova-compute with its provider config): remove '
                         'that, restart nova-compute and run this again')


def remove_config(args, nodes, report):
    """OPIE's settings out of the scheduler nova.conf of ``args``, unless
    preemptible servers are still there (their deletion timed out): safe
    mode needs OPIE's filter until they are gone."""
    running = sum(len(node.preemptible()) for node in nodes)
    if running:
        report.leave(args.config_file, "OPIE's settings kept: %s, and "
                     "safe mode needs OPIE's filter until none is" % _count(
                         running, 'preemptible server', 'is still there',
                         'are still there'))
        return
    nova_conf_command.remove_scheduler(args, report.dry_run)


def _positive(value):
    """Whether a heartbeat's JSON ``value`` is a positive finite number."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0)


def _count(number, what, verb='', verb_plural=''):
    """``1 server runs``, ``2 servers run``: the verb agrees."""
    one = number == 1
    return ('%d %s%s %s' % (number, what, '' if one else 's',
                            verb if one else verb_plural)).rstrip()
