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

"""``opie-manage rollback`` against a fake cloud: its refusals (exit 2,
one line) and the lines it prints for what it does and what it leaves."""
import datetime
import functools
import json
import os
import re
import threading
import types

from keystoneauth1 import exceptions as ks_exceptions
import pytest

from opie.cmd import cloud
from tests.unit.cmd import helpers
from opie.cmd import rollback
from opie.core import preemptible
from opie.nova.periodic import leader
from opie.nova.request import cas
from opie.nova.request import ledger

OPIE_INVENTORY = {name: {'total': 8}
                  for name in preemptible.PROVIDER_CONFIG_CLASSES}
STANDARD_INVENTORY = {'VCPU': {'total': 8}}
SERVER = {preemptible.CUSTOM.vcpus: 1}


class FakeServers:
    """novaclient's servers: deleting frees the server's allocations at
    once, shelving only once it is offloaded (unless ``stuck``)."""

    def __init__(self, placement):
        self.placement = placement
        self.status = {}
        self.calls = []
        self.stuck = False
        self.refuse = set()

    def get(self, uuid):
        return types.SimpleNamespace(name='vm-' + uuid[:4],
                                     status=self.status.get(uuid, 'ACTIVE'))

    def delete(self, uuid):
        self.calls.append(('delete', uuid))
        if not self.stuck:
            self.placement.free(uuid)

    def shelve(self, uuid):
        self.calls.append(('shelve', uuid))
        self.status[uuid] = 'SHELVED'

    def shelve_offload(self, uuid):
        self.calls.append(('shelve_offload', uuid))
        self.placement.free(uuid)


class FakeCloud:
    """Placement as the rollback reads and changes it, and novaclient's
    servers; ``deleted`` lists every DELETE that changed something."""

    def __init__(self):
        self.providers = {}     # uuid -> (name, inventories, consumers)
        self.classes = set(rollback.CLASSES)
        self.traits = set()
        self.ledgers = set()    # provider uuids
        self.users = {}
        self.deleted = []
        self.servers = FakeServers(self)
        self.nova = types.SimpleNamespace(servers=self.servers)

    def add_node(self, name, servers=(), opie=True, with_token=True):
        uuid = '%s-uuid' % name
        inventories = dict(STANDARD_INVENTORY, **(OPIE_INVENTORY if opie
                                                  else {}))
        consumers = {server: dict(SERVER) for server in servers}
        if with_token:
            consumers[cas.consumer(uuid)] = {preemptible.HOST_TOKEN: 1}
        self.providers[uuid] = (name, inventories, consumers)
        return uuid

    def add_lease(self):
        self.providers[leader.PROVIDER_UUID] = (
            leader.PROVIDER_NAME, {leader.RESOURCE_CLASS: {'total': 1}},
            {leader.CONSUMER_UUID: {leader.RESOURCE_CLASS: 1}})
        self.users[leader.CONSUMER_UUID] = 'sched-1:42:abcd'

    def add_ledger(self, project, charges):
        uuid = ledger.provider_uuid(project)
        self.providers[uuid] = (
            ledger.provider_name(project),
            {ledger.RESOURCE_CLASS: {'total': 600}},
            {consumer: {ledger.RESOURCE_CLASS: minutes}
             for consumer, minutes in charges.items()})
        self.ledgers.add(uuid)
        self.traits |= {ledger.TRAIT, ledger.SET_TRAIT}
        self.classes.add(ledger.RESOURCE_CLASS)
        return uuid

    def free(self, consumer):
        for _, _, consumers in self.providers.values():
            consumers.pop(consumer, None)

    # the Cloud interface used ---------------------------------------------
    def compute_nodes(self):
        return [types.SimpleNamespace(id=uuid, hypervisor_hostname=name)
                for uuid, (name, _, _) in self.providers.items()
                if uuid != leader.PROVIDER_UUID and uuid not in self.ledgers]

    def inventories(self, uuid):
        return dict(self.providers[uuid][1])

    def server(self, uuid):
        return self.servers.get(uuid)

    def server_action(self, action, uuid):
        if uuid in self.servers.refuse:
            return 'Cannot %s instance %s while it is in vm_state error' % (
                action, uuid)
        getattr(self.servers, action)(uuid)
        return None

    def placement_get(self, url):
        parts = url.strip('/').split('/')
        if parts[0] == 'allocations':
            held = {rp: {'resources': consumers[parts[1]]}
                    for rp, (_, _, consumers) in self.providers.items()
                    if parts[1] in consumers}
            return {'allocations': held,
                    'user_id': self.users.get(parts[1])}
        if parts[0] == 'resource_classes':
            return {} if parts[1] in self.classes else None
        if parts[0].startswith('traits?name=in:'):
            names = parts[0].partition(':')[2].split(',')
            return {'traits': sorted(self.traits & set(names))}
        if parts[0] == 'resource_providers?required=%s' % ledger.TRAIT:
            assert ledger.TRAIT in self.traits, 'Placement answers 400'
            return {'resource_providers': [
                {'uuid': uuid, 'name': self.providers[uuid][0]}
                for uuid in sorted(self.ledgers)]}
        if parts[1] not in self.providers:
            return None
        if parts[-1] == 'allocations':
            return {'allocations': {
                uuid: {'resources': dict(resources)} for uuid, resources
                in self.providers[parts[1]][2].items()}}
        return {'name': self.providers[parts[1]][0]}

    def placement_delete(self, url):
        parts = url.strip('/').split('/')
        if parts[0] == 'allocations':
            if not self.placement_get(url)['allocations']:
                return None
            self.free(parts[1])
        elif parts[0] == 'resource_classes':
            if any(parts[1] in inventories
                   for _, inventories, _ in self.providers.values()):
                return False
            self.classes.discard(parts[1])
        elif parts[0] == 'traits':
            if any(uuid in self.providers for uuid in self.ledgers):
                return False
            self.traits.discard(parts[1])
        elif len(parts) == 2:
            if self.providers[parts[1]][2]:
                return False
            del self.providers[parts[1]]
        else:
            _, inventories, consumers = self.providers[parts[1]]
            if any(parts[3] in held for held in consumers.values()):
                return False
            del inventories[parts[3]]
        self.deleted.append(url)
        return True


@pytest.fixture
def fake(monkeypatch):
    conn = FakeCloud()
    monkeypatch.setattr(cloud, 'connect', lambda args: conn)
    monkeypatch.setattr(rollback, 'POLL_SECONDS', 0)
    return conn


def write_beat(path, seconds_ago, interval=30):
    now = datetime.datetime.now(datetime.timezone.utc)
    time = now - datetime.timedelta(seconds=seconds_ago)
    path.write_text(json.dumps({
        'host': 'sched-1', 'pid': 1, 'interval': interval,
        'time': time.strftime('%Y-%m-%dT%H:%M:%SZ')}))
    return str(path)


@pytest.fixture
def stale_beat(tmp_path):
    return write_beat(tmp_path / 'heartbeat', 3600)


run = functools.partial(helpers.run, command='rollback')
refused = functools.partial(helpers.refused, command='rollback',
                            prefix='opie-manage rollback: error: ')


# refusals -------------------------------------------------------------------
def test_refused_without_a_heartbeat_or_force(fake, capsys):
    fake.add_node('host-A')

    err = refused(capsys)

    assert 'cannot tell whether opie-scheduler still runs' in err
    assert not fake.deleted


def test_refused_while_opie_scheduler_beats(fake, capsys, tmp_path):
    fake.add_node('host-A')
    beat = write_beat(tmp_path / 'heartbeat', 10)

    err = refused(capsys, '--heartbeat-file', beat)

    assert 'opie-scheduler still runs on sched-1' in err
    # Whole seconds in the file, and the command reads the clock later.
    assert re.search(r'is 1[01] s old \(interval 30 s\)', err), err
    assert 'try again once it is 60 s old' in err
    assert not fake.deleted


def test_one_live_heartbeat_of_several_is_enough_to_refuse(
        fake, capsys, tmp_path, stale_beat):
    live = write_beat(tmp_path / 'other', 5)

    err = refused(capsys, '--heartbeat-file', stale_beat,
                  '--heartbeat-file', live)

    assert live in err


def test_refused_with_a_missing_heartbeat_file(fake, capsys, tmp_path):
    err = refused(capsys, '--heartbeat-file', str(tmp_path / 'nothing'))

    assert 'no heartbeat in %s' % (tmp_path / 'nothing') in err


def test_refused_with_a_heartbeat_without_time(fake, capsys, tmp_path):
    path = tmp_path / 'heartbeat'
    path.write_text('{"interval": 30, "time": "yesterday"}')

    err = refused(capsys, '--heartbeat-file', str(path))

    assert 'has no valid "time"' in err


@pytest.mark.parametrize('text', [
    '[1, 2]', '{"time": "2020-01-01T00:00:00Z", "interval": NaN}',
    '{"time": "2020-01-01T00:00:00Z", "interval": true}',
    '{"time": "2020-01-01T00:00:00", "interval": 30}'])
def test_refused_with_a_heartbeat_of_anything_else(fake, capsys, tmp_path,
                                                   text):
    path = tmp_path / 'heartbeat'
    path.write_text(text)

    err = refused(capsys, '--heartbeat-file', str(path))

    assert 'has no valid "time" or "interval"' in err


def test_force_and_heartbeat_file_exclude_each_other(capsys, stale_beat):
    err = refused(capsys, '--force', '--heartbeat-file', stale_beat)

    assert 'not allowed with argument' in err


@pytest.mark.parametrize('args', [
    ['--preemptibles', 'kill'], ['--timeout', '-1'], ['--timeout', 'soon']])
def test_bad_options_are_one_line(capsys, args):
    refused(capsys, '--force', *args)


def test_config_dir_needs_config_file(capsys, tmp_path):
    err = refused(capsys, '--force', '--config-dir', str(tmp_path))

    assert '--config-dir goes with --config-file' in err


@pytest.mark.parametrize('text, message', [
    ('[opie]\nheartbeat_path = $nosuch/beat\n',
     '[opie] heartbeat_path: no such option nosuch'),
    ('[opie\n', 'nova.conf')])
def test_a_bad_scheduler_nova_conf_is_one_line(capsys, tmp_path, text,
                                               message):
    conf = tmp_path / 'nova.conf'
    conf.write_text(text)

    err = refused(capsys, '--config-file', str(conf))

    assert message in err


def test_refused_while_preemptible_servers_run(fake, capsys, stale_beat):
    fake.add_node('host-A', servers=['s1'])
    fake.add_node('host-B')

    err = refused(capsys, '--heartbeat-file', stale_beat)

    assert ('1 preemptible server still runs on host-A: drain them first, '
            'or give --preemptibles delete, shelve or keep') in err
    assert not fake.deleted


def test_keep_refused_with_config_file(fake, capsys, tmp_path, stale_beat):
    fake.add_node('host-A', servers=['s1', 's2'])
    conf = tmp_path / 'nova.conf'
    conf.write_text('[opie]\nheartbeat_path = %s\n' % stale_beat)

    err = refused(capsys, '--config-file', str(conf),
                  '--preemptibles', 'keep')

    assert ('--preemptibles keep with --config-file: 2 preemptible servers '
            'still run on host-A') in err
    assert 'nova-compute does not start' in err
    assert not fake.deleted
    assert '[opie]' in conf.read_text()


def test_an_unreachable_cloud_is_one_line(capsys, monkeypatch, stale_beat):
    def connect(args):
        raise ks_exceptions.ConnectFailure('Unable to establish connection '
                                           'to http://keystone:5000\n')
    monkeypatch.setattr(cloud, 'connect', connect)

    err = refused(capsys, '--heartbeat-file', stale_beat)

    assert 'cloud: Unable to establish connection' in err


# what it does and leaves ---------------------------------------------------
def test_removes_everything_of_opie(fake, capsys, stale_beat):
    a = fake.add_node('host-A')
    fake.add_node('host-B', with_token=False)
    fake.add_lease()

    code, out, err = run(capsys, '--heartbeat-file', stale_beat)

    assert (code, err) == (0, '')
    assert out.splitlines() == [
        'removed host token of compute node host-A (consumer %s)'
        % cas.consumer(a),
        'removed reconciler lease (consumer %s, held by sched-1:42:abcd)'
        % leader.CONSUMER_UUID,
        'removed resource provider opie-coordination (%s)'
        % leader.PROVIDER_UUID,
        'removed %s inventory of compute node host-A (a nova-compute still '
        'given its provider config puts it back)'
        % ', '.join(preemptible.PROVIDER_CONFIG_CLASSES),
        'removed %s inventory of compute node host-B (a nova-compute still '
        'given its provider config puts it back)'
        % ', '.join(preemptible.PROVIDER_CONFIG_CLASSES)] + [
        'removed resource class %s' % name for name in rollback.CLASSES] + [
        'nothing of OPIE is left in Placement']
    assert fake.classes == set()
    assert [inventories for _, inventories, _ in fake.providers.values()
            ] == [STANDARD_INVENTORY] * 2

    # Again: nothing to do.
    code, out, _ = run(capsys, '--heartbeat-file', stale_beat)
    assert (code, out) == (0, 'nothing of OPIE is left in Placement\n')


def test_removes_the_budget_ledgers_and_their_charges(
        fake, capsys, stale_beat):
    fake.add_node('host-A')
    uuid = fake.add_ledger('p1', {'c1': 132, 'c2': 160})

    code, out, err = run(capsys, '--heartbeat-file', stale_beat)

    assert (code, err) == (0, '')
    lines = out.splitlines()
    assert ('removed preemption budget ledger opie-budget-p1 (%s) and its '
            '2 charge(s)' % uuid) in lines
    assert 'removed trait %s' % ledger.TRAIT in lines
    assert 'removed resource class %s' % ledger.RESOURCE_CLASS in lines
    assert lines[-1] == 'nothing of OPIE is left in Placement'
    assert uuid not in fake.providers
    assert (fake.traits, fake.classes) == (set(), set())


def test_dry_run_changes_nothing(fake, capsys, stale_beat):
    fake.add_node('host-A', servers=['s1'])
    fake.add_lease()

    code, out, _ = run(capsys, '--heartbeat-file', stale_beat,
                       '--preemptibles', 'delete', '--dry-run')

    assert code == 0
    lines = out.splitlines()
    assert lines[0] == 'would delete preemptible server vm-s1 (s1) on host-A'
    assert all(line.startswith('would ') for line in lines[:-1])
    assert lines[-1] == 'dry run: nothing of OPIE is left in Placement'
    assert not fake.deleted and not fake.servers.calls


def test_keep_removes_tokens_and_says_what_stays(fake, capsys, stale_beat):
    a = fake.add_node('host-A', servers=['s1', 's2'])
    fake.add_node('host-B')

    code, out, _ = run(capsys, '--force', '--preemptibles', 'keep')

    assert code == 1
    assert 'removed host token of compute node host-A (consumer %s)' % (
        cas.consumer(a)) in out
    assert ('left: CUSTOM_PREEMPTIBLE_VCPU inventory of compute node '
            'host-A: 2 consumers use it: keep its provider config, or '
            'nova-compute does not start') in out
    assert ('removed CUSTOM_PREEMPTIBLE_MEMORY_MB, CUSTOM_PREEMPTIBLE_DISK_GB'
            ', CUSTOM_OPIE_HOST inventory of compute node host-A') in out
    assert ('left: resource class CUSTOM_PREEMPTIBLE_VCPU: inventory of it '
            'is left on host-A') in out
    assert 'removed resource class CUSTOM_OPIE_HOST' in out
    assert out.splitlines()[-1] == '2 things of OPIE left, see above'
    assert not fake.servers.calls


def test_delete_waits_for_the_servers_to_go(fake, capsys, stale_beat):
    fake.add_node('host-A', servers=['s1'])
    fake.add_node('host-B', servers=['s2'])

    code, out, _ = run(capsys, '--heartbeat-file', stale_beat,
                       '--preemptibles', 'delete')

    assert code == 0, out
    assert fake.servers.calls == [('delete', 's1'), ('delete', 's2')]
    assert out.startswith(
        'deleted preemptible server vm-s1 (s1) on host-A\n'
        'deleted preemptible server vm-s2 (s2) on host-B\n')
    assert fake.classes == set()


def test_shelve_offloads_the_shelved_servers(fake, capsys, stale_beat):
    fake.add_node('host-A', servers=['s1'])

    code, out, _ = run(capsys, '--heartbeat-file', stale_beat,
                       '--preemptibles', 'shelve')

    assert code == 0, out
    assert fake.servers.calls == [('shelve', 's1'), ('shelve_offload', 's1')]
    assert out.startswith('shelved preemptible server vm-s1 (s1) on host-A\n')


def test_servers_still_there_at_the_timeout_are_left(fake, capsys,
                                                     stale_beat):
    fake.add_node('host-A', servers=['s1'])
    fake.servers.stuck = True

    code, out, _ = run(capsys, '--heartbeat-file', stale_beat,
                       '--preemptibles', 'delete', '--timeout', '0')

    assert code == 1
    assert ('left: CUSTOM_PREEMPTIBLE_VCPU inventory of compute node host-A: '
            '1 consumer uses it') in out


def test_config_file_loses_opie_settings(fake, capsys, tmp_path,
                                         stale_beat):
    fake.add_node('host-A')
    conf = tmp_path / 'nova.conf'
    text = ('[filter_scheduler]\nenabled_filters = ComputeFilter,'
            'PreemptibleFilter\n[opie]\nheartbeat_path = %s\n' % stale_beat)
    conf.write_text(text)

    code, out, _ = run(capsys, '--config-file', str(conf), '--dry-run')
    assert code == 0
    assert ('%s: would remove [filter_scheduler] enabled_filters, [opie]'
            % conf) in out
    assert conf.read_text() == text

    code, out, _ = run(capsys, '--config-file', str(conf))
    assert code == 0
    assert ('%s: removed [filter_scheduler] enabled_filters, [opie]'
            % conf) in out
    assert conf.read_text() == ('[filter_scheduler]\nenabled_filters = '
                                'ComputeFilter\n')


def test_a_server_nova_refuses_to_shelve_is_left(fake, capsys, stale_beat):
    fake.add_node('host-A', servers=['s1', 's2'])
    fake.servers.refuse.add('s1')

    code, out, _ = run(capsys, '--heartbeat-file', stale_beat,
                       '--preemptibles', 'shelve')

    assert code == 1
    assert ('left: preemptible server vm-s1 (s1) on host-A: Nova refused to '
            'shelve it: Cannot shelve instance s1 while it is in vm_state '
            'error') in out
    assert fake.servers.calls == [('shelve', 's2'), ('shelve_offload', 's2')]
    assert ('left: CUSTOM_PREEMPTIBLE_VCPU inventory of compute node host-A: '
            '1 consumer uses it') in out


def test_a_shelved_server_of_an_earlier_run_is_offloaded(fake, capsys,
                                                         stale_beat):
    fake.add_node('host-A', servers=['s1'])
    fake.servers.status['s1'] = 'SHELVED'

    code, out, _ = run(capsys, '--heartbeat-file', stale_beat,
                       '--preemptibles', 'shelve')

    assert code == 0, out
    assert fake.servers.calls == [('shelve_offload', 's1')]


def test_config_kept_while_preemptible_servers_are_there(
        fake, capsys, tmp_path, stale_beat):
    fake.add_node('host-A', servers=['s1'])
    fake.servers.stuck = True
    conf = tmp_path / 'nova.conf'
    text = '[opie]\nheartbeat_path = %s\n' % stale_beat
    conf.write_text(text)

    code, out, _ = run(capsys, '--config-file', str(conf), '--preemptibles',
                       'delete', '--timeout', '0')

    assert code == 1
    assert ("left: %s: OPIE's settings kept: 1 preemptible server is still "
            "there, and safe mode needs OPIE's filter until none is" % conf
            ) in out
    assert conf.read_text() == text


# under attack (issue 24 review) --------------------------------------------
def test_a_heartbeat_interval_past_float_range_is_one_line(fake, capsys,
                                                           tmp_path):
    # Two intervals of 1e308 are infinite seconds: no %d of them.
    fake.add_node('host-A')
    beat = write_beat(tmp_path / 'heartbeat', 5, interval=1e308)

    err = refused(capsys, '--heartbeat-file', beat)

    assert 'heartbeat %s' % beat in err
    assert fake.providers['host-A-uuid'][2]


def test_a_heartbeat_fifo_is_refused_without_reading_it(fake, capsys,
                                                        tmp_path):
    # Opening a FIFO for reading waits for a writer, reading it waits for
    # the writer to close: not a heartbeat file, and never read.
    fake.add_node('host-A')
    fifo = tmp_path / 'heartbeat'
    os.mkfifo(fifo)
    beat = json.dumps({
        'host': 'sched-1', 'interval': 30,
        'time': '2000-01-01T00:00:00Z'})

    def writer():
        with open(fifo, 'w') as f:
            f.write(beat)
    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        err = refused(capsys, '--heartbeat-file', str(fifo))
    finally:
        # Release the writer if the command never opened the FIFO.
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        thread.join()
        os.close(fd)

    assert 'no heartbeat in %s' % fifo in err
    assert fake.providers['host-A-uuid'][2]


def test_a_heartbeat_file_of_megabytes_is_no_heartbeat(fake, capsys,
                                                       tmp_path):
    # A heartbeat is a few hundred bytes; one of megabytes (a symlink to
    # a log, /dev/zero) is not read whole into memory.
    fake.add_node('host-A')
    path = tmp_path / 'heartbeat'
    path.write_text(json.dumps({'host': 'sched-1', 'interval': 30,
                                'time': '2000-01-01T00:00:00Z'})
                    + ' ' * (4 << 20))

    err = refused(capsys, '--heartbeat-file', str(path))

    assert 'no heartbeat in %s' % path in err
    assert fake.providers['host-A-uuid'][2]


def test_heartbeats_checked_again_before_the_tokens_go(fake, capsys,
                                                       tmp_path):
    # The drain may take --timeout (600 s): an opie-scheduler started
    # meanwhile (configuration management restoring its unit, a second
    # operator) must not lose its tokens under it.
    a = fake.add_node('host-A', servers=['s1'])
    path = tmp_path / 'heartbeat'
    write_beat(path, 3600)
    delete = fake.servers.delete

    def delete_while_a_scheduler_starts(uuid):
        delete(uuid)
        write_beat(path, 0)
    fake.servers.delete = delete_while_a_scheduler_starts

    code, out, err = run(capsys, '--heartbeat-file', str(path),
                         '--preemptibles', 'delete')

    assert code == 2, out
    assert len(err.splitlines()) == 1, err
    assert 'opie-scheduler still runs on sched-1' in err
    assert cas.consumer(a) in fake.providers[a][2]
    assert not [url for url in fake.deleted
                if not url.startswith('/allocations/s1')]


def test_a_server_no_longer_preemptible_when_acted_on_is_spared(
        fake, capsys, stale_beat):
    # Its owner resized it to a normal flavor after the rollback listed
    # the node (told to save what they need, rollback step 3): it holds
    # standard classes now, and is not the rollback's to delete.
    a = fake.add_node('host-A', servers=['s1', 's2'])
    get = fake.servers.get

    def get_after_a_resize(uuid):
        if uuid == 's1':
            fake.providers[a][2]['s1'] = {'VCPU': 1}
        return get(uuid)
    fake.servers.get = get_after_a_resize

    code, out, _ = run(capsys, '--heartbeat-file', stale_beat,
                       '--preemptibles', 'delete')

    assert fake.servers.calls == [('delete', 's2')]
    assert 's1' not in out
    assert code == 0, out


def test_tenant_server_names_cannot_forge_lines(fake, capsys, stale_beat):
    # A server's name is its owner's to choose.
    fake.add_node('host-A', servers=['s1'])
    get = fake.servers.get
    name = 'x\nnothing of OPIE is left in Placement\x1b[2J\u2028y'

    def named(uuid):
        return types.SimpleNamespace(name=name, status=get(uuid).status)
    fake.servers.get = named

    code, out, _ = run(capsys, '--heartbeat-file', stale_beat,
                       '--preemptibles', 'delete')

    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == ('deleted preemptible server x\\nnothing of OPIE is '
                        'left in Placement\\x1b[2J\\u2028y (s1) on host-A')
    assert '\x1b' not in out


def test_a_heartbeat_nested_past_python_recursion_is_no_heartbeat(
        fake, capsys, tmp_path):
    fake.add_node('host-A')
    path = tmp_path / 'heartbeat'
    path.write_text('[' * 50000)

    err = refused(capsys, '--heartbeat-file', str(path))

    assert 'no heartbeat in %s' % path in err
