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

"""MariaDB and RabbitMQ from Debian's packages, on loopback only.

Debian starts both on install, listening on every interface; the lab
installs them with service starts refused (``policy-rc.d``), then runs
its own instances as plain processes with data under the lab directory:
``mariadbd --bind-address 127.0.0.1`` and ``rabbitmq-server`` with its
AMQP listener, Erlang distribution port and ``epmd`` bound to 127.0.0.1.
"""
import os
import pathlib
import subprocess

from opie.lab import process
from opie.lab import settings

PACKAGES = ('mariadb-server', 'mariadb-client', 'rabbitmq-server')
MARIADBD = '/usr/sbin/mariadbd'
RABBITMQ = '/usr/lib/rabbitmq/bin/rabbitmq-server'
RABBITMQCTL = '/usr/lib/rabbitmq/bin/rabbitmqctl'
POLICY_RC_D = pathlib.Path('/usr/sbin/policy-rc.d')
# The names of the processes started here.
NAMES = ('mysql', 'epmd', 'rabbitmq')
DATABASES = ('keystone', 'placement', 'glance', 'neutron', 'nova_api',
             'nova_cell0', 'nova')


def install():
    """apt-get install what is missing, with no service started."""
    if os.path.exists(MARIADBD) and os.path.exists(RABBITMQ):
        return
    if os.geteuid() != 0:
        raise process.Unavailable(
            'MariaDB and RabbitMQ are not installed and installing them '
            '(apt-get) needs root: apt-get install %s' % ' '.join(PACKAGES))
    created = not POLICY_RC_D.exists()
    if created:
        # 101: "action forbidden by policy" - no service starts on install.
        POLICY_RC_D.write_text('#!/bin/sh\nexit 101\n')
        POLICY_RC_D.chmod(0o755)
    try:
        env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
        for argv in (['apt-get', 'update', '-q'],
                     ['apt-get', 'install', '-y', '-q'] + list(PACKAGES)):
            done = subprocess.run(argv, env=env, capture_output=True,
                                  text=True)
            if done.returncode:
                raise process.Unavailable('%s failed:\n%s' % (
                    ' '.join(argv[:2]), done.stdout[-2000:] + done.stderr))
    finally:
        if created:
            POLICY_RC_D.unlink()


def _mysql_paths(lab):
    base = lab.data / 'mysql'
    return base / 'db', base / 'mysql.sock'


def start_mariadb(lab):
    datadir, sock = _mysql_paths(lab)
    # As the lab's own user: the mysql account may not even reach the lab
    # directory (a clone under a private mktemp -d); mariadbd runs as root
    # only when told so explicitly.
    user = ['--user=root'] if os.geteuid() == 0 else []
    if not datadir.exists():
        datadir.mkdir(parents=True)
        done = subprocess.run(
            ['mariadb-install-db', '--no-defaults', '--datadir=%s' % datadir,
             '--auth-root-authentication-method=normal', '--skip-test-db']
            + user, capture_output=True, text=True)
        if done.returncode:
            raise process.LabError('mariadb-install-db failed:\n%s'
                                   % (done.stdout + done.stderr)[-2000:])
    proc = process.start(lab, 'mysql', [
        MARIADBD, '--no-defaults', '--datadir=%s' % datadir,
        '--socket=%s' % sock, '--pid-file=%s' % datadir.with_suffix('.pid'),
        '--bind-address=%s' % settings.HOST,
        '--port=%d' % settings.PORTS['mysql'], '--skip-name-resolve',
        '--max-connections=2000', '--innodb-flush-log-at-trx-commit=0',
        '--innodb-buffer-pool-size=256M'] + user)
    process.wait(lab, {'mysql': proc},
                 lambda: process.port_open(settings.PORTS['mysql']))
    statements = ["CREATE USER IF NOT EXISTS 'opie'@'127.0.0.1' "
                  "IDENTIFIED BY '%s'" % settings.PASSWORD]
    for name in DATABASES:
        statements += [
            'CREATE DATABASE IF NOT EXISTS %s CHARACTER SET utf8mb4' % name,
            "GRANT ALL ON %s.* TO 'opie'@'127.0.0.1'" % name]
    mysql(lab, ';\n'.join(statements) + ';')


def mysql(lab, sql):
    """Run SQL as MariaDB's root over the lab's socket."""
    _, sock = _mysql_paths(lab)
    done = subprocess.run(['mariadb', '--socket=%s' % sock, '-uroot',
                           '--batch', '--skip-column-names'],
                          input=sql, capture_output=True, text=True)
    if done.returncode:
        raise process.LabError('SQL failed: %s' % done.stderr.strip())
    return done.stdout


def rabbitmq_env(lab):
    base = lab.data / 'rabbitmq'
    return {
        'HOME': str(base),
        'RABBITMQ_NODENAME': 'opie-lab@localhost',
        'RABBITMQ_NODE_IP_ADDRESS': settings.HOST,
        'RABBITMQ_NODE_PORT': str(settings.PORTS['rabbitmq']),
        'RABBITMQ_DIST_PORT': str(settings.PORTS['rabbitmq-dist']),
        'RABBITMQ_MNESIA_BASE': str(base / 'mnesia'),
        'RABBITMQ_LOG_BASE': str(lab.logs / 'rabbitmq'),
        'RABBITMQ_CONFIG_FILE': str(base / 'rabbitmq'),
        'RABBITMQ_ENABLED_PLUGINS_FILE': str(base / 'enabled_plugins'),
        'RABBITMQ_PID_FILE': str(base / 'rabbitmq.pid'),
        'ERL_EPMD_ADDRESS': settings.HOST,
        'ERL_EPMD_PORT': str(settings.PORTS['epmd']),
        # Erlang's distribution listener, on loopback like the rest.
        'RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS':
            '-kernel inet_dist_use_interface {127,0,0,1}',
    }


def start_rabbitmq(lab):
    env = rabbitmq_env(lab)
    base = pathlib.Path(env['HOME'])
    base.mkdir(parents=True, exist_ok=True)
    (base / 'enabled_plugins').write_text('[].\n')
    (base / 'rabbitmq.conf').write_text(
        'listeners.tcp.default = %s:%d\nloopback_users = none\n'
        % (settings.HOST, settings.PORTS['rabbitmq']))
    # epmd in the foreground, as the lab's own process: started by Erlang
    # it would daemonize and outlive the lab.
    epmd = process.start(lab, 'epmd', ['epmd', '-address', settings.HOST,
                                       '-port', str(settings.PORTS['epmd'])])
    process.wait(lab, {'epmd': epmd},
                 lambda: process.port_open(settings.PORTS['epmd']))
    start_broker(lab)


def start_broker(lab):
    """RabbitMQ itself, with epmd already up (again after a test stopped
    it)."""
    proc = process.start(lab, 'rabbitmq', [RABBITMQ], env=rabbitmq_env(lab))
    process.wait(lab, {'rabbitmq': proc},
                 lambda: process.port_open(settings.PORTS['rabbitmq']))
