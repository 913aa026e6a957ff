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

"""``opie-lab up|down|status``: start, stop and show the OPIE lab.

``up`` builds the lab from nothing (configuration, databases, keystone's
users and catalog, an image, flavors) and starts every service, printing
each step with its time; ``down`` stops exactly the processes ``up``
recorded, the servers' guest processes included; ``status`` lists them.
Exit codes: 0 done, 1 the lab failed (the message says why), 3 this
machine cannot run the lab (no root to install its servers, ports taken).
"""
from concurrent import futures
import functools
import os
import shutil
import subprocess
import sys
import time

from opie import arguments
from opie import oneline
from opie.lab import configs
from opie.lab import guests
from opie.lab import process
from opie.lab import servers
from opie.lab import settings

EXIT_UNAVAILABLE = 3
API_SERVICES = ('placement', 'glance', 'neutron', 'nova-api',
                'nova-metadata', 'metadata-proxy')
# Each service's config directory under etc/, and the variable it reads
# it from.
CONFIG_DIRS = {'keystone': 'KEYSTONE', 'placement': 'PLACEMENT',
               'glance': 'GLANCE', 'neutron': 'NEUTRON', 'nova-api': 'NOVA',
               'nova-metadata': 'NOVA'}
SCHEDULER_BINARIES = ('opie-scheduler', 'nova-scheduler')


def _bin(name):
    return os.path.join(sys.prefix, 'bin', name)


def _run(lab, name, argv):
    """Run a set-up command; its output goes to logs/<name>.log."""
    lab.logs.mkdir(parents=True, exist_ok=True)
    with open(lab.logs / ('%s.log' % name), 'ab') as log:
        done = subprocess.run([str(a) for a in argv], stdout=log,
                              stderr=subprocess.STDOUT)
    if done.returncode:
        raise process.LabError('%s failed (exit %d):\n%s' % (
            ' '.join(str(a) for a in argv[:3]), done.returncode,
            process.log_tail(lab, name)))


class Steps:
    """Prints each step of ``up`` with the seconds since the start."""

    def __init__(self):
        self.t0 = time.monotonic()

    def __call__(self, text):
        print('[%6.1fs] %s' % (time.monotonic() - self.t0, text),
              flush=True)


def _start_apis(lab, services):
    """Start API services under gunicorn; wait until each answers."""
    procs = {}
    for service in services:
        directory = configs.gunicorn(lab, service)
        procs[service] = process.start(
            lab, service, [_bin('gunicorn')], cwd=directory,
            env=_api_env(lab, service), marker='gunicorn')
    process.wait(lab, procs, lambda: all(
        process.http_ok(lab.url(service)) for service in services))


def _api_env(lab, service):
    if service == 'metadata-proxy':
        return {'OPIE_LAB_METADATA_API': lab.url('nova-metadata'),
                'OPIE_LAB_METADATA_SECRET': settings.PASSWORD}
    name = CONFIG_DIRS[service]
    return {'OS_%s_CONFIG_DIR' % name: str(lab.etc / name.lower())}


def _nova_manage(lab, *args):
    _run(lab, 'nova-manage', [_bin('nova-manage'), '--config-file',
                              lab.etc / 'nova' / 'nova.conf'] + list(args))


def _opie_manage(lab, *args):
    _run(lab, 'opie-manage', [_bin('opie-manage')] + list(args))


def configure_opie(lab):
    """Nova's OPIE settings and provider configs, written by the same
    commands the DevStack plugin runs."""
    nova_conf = lab.etc / 'nova' / 'nova.conf'
    # DevStack's defaults (devstack/settings).
    _opie_manage(lab, 'nova-conf', 'scheduler', '--config-file', nova_conf,
                 '--costs', 'period', '--billing-period', '3600',
                 '--max-victims', '0', '--termination-mode', 'delete')
    vcpus, memory_mb, disk_gb = settings.COMPUTE_SIZE
    for index in range(1, lab.computes + 1):
        cpu_conf = configs.compute_conf(lab, index)
        provider_dir = configs.provider_dir(lab, index)
        provider_dir.mkdir(parents=True, exist_ok=True)
        _opie_manage(lab, 'nova-conf', 'compute', '--config-file', cpu_conf,
                     '--provider-config-dir', provider_dir)
        _opie_manage(lab, 'provider-config', '--config-file', cpu_conf,
                     '--vcpus', vcpus,
                     '--memory-mb', memory_mb, '--disk-gb', disk_gb,
                     '--output', provider_dir / 'opie.yaml')


def start_compute(lab, index):
    return process.start(
        lab, 'compute-%s' % index,
        [sys.executable, '-m', 'opie.lab.compute', '--config-file',
         configs.compute_conf(lab, index)],
        marker='opie.lab.compute')


def discover_hosts(lab):
    """Map new computes to the cell: Nova's API lists only mapped ones."""
    _nova_manage(lab, 'cell_v2', 'discover_hosts')


def _hypervisors_up(conn, hosts):
    up = {s.host for s in conn.compute.services(binary='nova-compute')
          if s.state == 'up'}
    return hosts <= up


def _prepare(lab):
    running = process.recorded(lab)
    if running:
        raise process.LabError('the lab already runs (%s): run "opie-lab '
                               'down" first' % ', '.join(running))
    busy = [n for n, p in settings.PORTS.items() if process.port_open(p)]
    if busy:
        raise process.Unavailable('ports in use on %s: %s' % (
            settings.HOST, ', '.join('%s (%d)' % (n, settings.PORTS[n])
                                     for n in busy)))
    servers.install()
    for directory in (lab.etc, lab.data, lab.logs, lab.run):
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
    lab.save()


def _write_configs(lab):
    for write in (configs.keystone, configs.placement, configs.glance,
                  configs.neutron, configs.nova):
        write(lab)
    for index in range(1, lab.computes + 1):
        configs.nova_compute(lab, index)
    for index in range(2, settings.SCHEDULERS + 1):
        configs.nova_scheduler(lab, index)
    configure_opie(lab)


def _sync_databases(lab):
    """Each service's schema; the four run side by side."""
    def nova():
        _nova_manage(lab, 'api_db', 'sync')
        _nova_manage(lab, 'cell_v2', 'map_cell0', '--database_connection',
                     lab.db_url('nova_cell0'))
        _nova_manage(lab, 'cell_v2', 'create_cell', '--name', 'cell1')
        _nova_manage(lab, 'db', 'sync')
    etc = lab.etc
    commands = {
        'placement-manage': [_bin('placement-manage'), '--config-file',
                             etc / 'placement' / 'placement.conf', 'db',
                             'sync'],
        'glance-manage': [_bin('glance-manage'), '--config-file',
                          etc / 'glance' / 'glance-api.conf', 'db_sync'],
        'neutron-db-manage': [
            _bin('neutron-db-manage'), '--config-file',
            etc / 'neutron' / 'neutron.conf', '--config-file',
            etc / 'neutron' / 'plugins' / 'ml2' / 'ml2_conf.ini',
            'upgrade', 'heads'],
    }
    jobs = [nova] + [functools.partial(_run, lab, name, argv)
                     for name, argv in commands.items()]
    with futures.ThreadPoolExecutor(len(jobs)) as pool:
        for done in [pool.submit(job) for job in jobs]:
            done.result()


def start_schedulers(lab, *extra, binary='opie-scheduler', faults=False):
    """Start every scheduler, reading the config files ``extra`` last (a
    test's own ``[opie]`` settings); {name: pid}. ``binary`` may be
    ``nova-scheduler``, Nova's stock scheduler run the same way (a
    benchmark's baseline); ``faults`` runs ``opie-scheduler`` with the
    lab's fault points (:mod:`opie.lab.scheduler`)."""
    nova_conf = lab.etc / 'nova' / 'nova.conf'
    command, marker = [_bin(binary)], None
    if faults:
        # Its process title shows the module's path.
        command, marker = [sys.executable, '-m', 'opie.lab.scheduler'], (
            'opie/lab/scheduler')
    procs = {}
    for index in range(1, settings.SCHEDULERS + 1):
        # More controllers: the same nova.conf, a host name of their own.
        name = binary + ('-%d' % index if index > 1 else '')
        argv = command + ['--config-file', nova_conf]
        if index > 1:
            argv += ['--config-file', configs.scheduler_conf(lab, index)]
        for path in extra:
            argv += ['--config-file', path]
        procs[name] = process.start(lab, name, argv, marker=marker)
    return procs


def restart_schedulers(lab, *extra, binary='opie-scheduler', faults=False):
    """Stop the schedulers, OPIE's or Nova's, and start ``binary`` with
    ``extra`` (see :func:`start_schedulers`)."""
    running = process.recorded(lab)
    process.stop(lab, {name: pid for name, pid in running.items()
                       if name.startswith(SCHEDULER_BINARIES)})
    return start_schedulers(lab, *extra, binary=binary, faults=faults)


def _start_nova(lab, conn):
    """Conductor, scheduler and computes; wait until every compute is up
    and mapped to the cell."""
    nova_conf = lab.etc / 'nova' / 'nova.conf'
    procs = {'nova-conductor': process.start(
        lab, 'nova-conductor', [_bin('nova-conductor'), '--config-file',
                                nova_conf])}
    procs.update(start_schedulers(lab))
    for index in range(1, lab.computes + 1):
        procs['compute-%d' % index] = start_compute(lab, index)
    hosts = {lab.compute_host(i) for i in range(1, lab.computes + 1)}
    process.wait(lab, procs, lambda: _hypervisors_up(conn, hosts))
    discover_hosts(lab)


def up(lab):
    # Late import: openstacksdk is only in the lab's venv.
    from opie.lab import bootstrap
    step = Steps()
    _prepare(lab)
    step('MariaDB')
    servers.start_mariadb(lab)
    step('RabbitMQ')
    servers.start_rabbitmq(lab)
    _write_configs(lab)
    step('keystone')
    bootstrap.keystone_first_admin(lab)
    bootstrap.clouds(lab)
    with futures.ThreadPoolExecutor(1) as pool:
        keystone = pool.submit(_start_apis, lab, ['keystone'])
        step('databases of placement, glance, neutron and nova')
        _sync_databases(lab)
        keystone.result()
    step('users, projects and catalog')
    bootstrap.users_and_catalog(lab)
    step('API services')
    _start_apis(lab, API_SERVICES)
    step('nova-conductor, opie-scheduler and %d computes' % lab.computes)
    _start_nova(lab, bootstrap.connect(lab))
    step('image and flavors')
    bootstrap.image(lab)
    bootstrap.flavors(lab)
    step('up: %s' % lab.clouds_yaml)


def down(lab):
    running = process.recorded(lab)
    # OpenStack first, all at once (each may take seconds to shut down
    # gracefully), then what they use.
    backends = {n: p for n, p in running.items() if n in servers.NAMES}
    for wave in ({n: p for n, p in running.items() if n not in backends},
                 backends):
        process.stop(lab, wave)
        for name, pid in wave.items():
            print('stopped %s (%d)' % (name, pid))
    # Servers' guest processes lead sessions of their own.
    for pid_file in lab.data.glob('guests/*/%s' % guests.PID_FILE):
        pid = int(pid_file.read_text())
        if process.members({pid}):
            process.stop_groups([pid])
            print('stopped guest %s (%d)' % (pid_file.parent.name, pid))
        pid_file.unlink()
    left = process.leftovers(lab)
    if left:
        raise process.LabError('still running after down:\n%s' % '\n'.join(
            '%d %s' % item for item in sorted(left.items())))


def status(lab):
    running = process.recorded(lab)
    if not running:
        print('the lab is down')
        return 1
    for name, pid in running.items():
        port = settings.PORTS.get(name)
        print('%-16s pid %-8d %s' % (
            name, pid, 'listening on %s:%d' % (settings.HOST, port)
            if port else ''))
    print('clouds.yaml: %s' % lab.clouds_yaml)
    return 0


def main(argv=None):
    parser = oneline.ArgumentParser(
        prog='opie-lab', description=__doc__.split('\n\n')[0])
    sub = parser.add_subparsers(dest='command', required=True)
    start = sub.add_parser('up', help='build and start the lab')
    start.add_argument('--computes', type=arguments.whole_number(1),
                       default=settings.DEFAULT_COMPUTES,
                       help='nova-compute processes (default %(default)s)')
    sub.add_parser('down', help='stop what "up" started')
    sub.add_parser('status', help='what runs')
    args = parser.parse_args(argv)
    lab = settings.Lab.load()
    try:
        if args.command == 'up':
            lab.computes = args.computes
            try:
                up(lab)
            except BaseException:
                # Half a lab is no use: stop it, keep the logs.
                down(lab)
                print('logs: %s' % lab.logs, file=sys.stderr)
                raise
        elif args.command == 'down':
            down(lab)
        else:
            return status(lab)
    except process.LabError as exc:
        print('opie-lab: %s' % exc, file=sys.stderr)
        return EXIT_UNAVAILABLE if isinstance(exc, process.Unavailable) else 1
    except KeyboardInterrupt:
        return 1
    return 0
