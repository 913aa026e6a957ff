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

import copy
import json

import pytest

from opie.core import snapshot

GOOD = {
    'now': '2026-01-15T12:00:00Z',
    'flavors': {'m': {'vcpus': 2, 'memory_mb': 4000, 'disk_gb': 40}},
    'hosts': [{'name': 'h1', 'vcpus': 8, 'memory_mb': 16384, 'disk_gb': 100,
               'cpu_allocation_ratio': 2.0,
               'reserved_host_memory_mb': 384,
               'instances': [{'uuid': 'u1', 'flavor': 'm',
                              'preemptible': True, 'locked': True,
                              'launched_at': '2026-01-15T11:00:00+00:00'},
                             {'uuid': 'u2', 'flavor': 'm',
                              'launched_at': '2026-01-15T11:00:00'}]}],
}


def test_good_snapshot_parses_with_defaults():
    snap = snapshot.parse(GOOD)
    host = snap.hosts[0]
    assert host.capacity == (16, 16000, 100)
    assert [i.uuid for i in host.preemptibles] == ['u1']
    assert host.preemptibles[0].eligible is False
    assert host.normal_used == (2, 4000, 40)


def test_terms_projects_and_budgets_are_read():
    data = copy.deepcopy(GOOD)
    data['flavors']['m'].update(tier=2, minimum_uptime=600)
    data['hosts'][0]['instances'][0]['project_id'] = 'proj'
    data['budgets'] = {'window_seconds': 3600,
                       'remaining_vcpu_minutes': {'proj': 90}}
    snap = snapshot.parse(data)
    victim = snap.hosts[0].preemptibles[0]
    assert (victim.tier, victim.minimum_uptime, victim.project_id) == (
        2, 600, 'proj')
    assert snap.budgets.window == 3600 and snap.budgets.limit('proj') == 90
    assert snapshot.parse(GOOD).budgets is None


def _broken(path, value):
    data = copy.deepcopy(GOOD)
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


@pytest.mark.parametrize('path, value, message', [
    (('now',), KeyError, "snapshot: missing field 'now'"),
    (('now',), 'yesterday', "now: 'yesterday' is not an ISO-8601"),
    (('flavors', 'm', 'vcpus'), 'two', 'flavors.m.vcpus: expected a number'),
    (('flavors', 'm', 'memory_mb'), -1, 'flavors.m.memory_mb: must be >= 0'),
    (('hosts',), {}, 'hosts: expected a list'),
    (('hosts', 0, 'name'), KeyError, "hosts[0]: missing field 'name'"),
    (('hosts', 0, 'cpu_allocation_ratio'), True,
     'hosts[0].cpu_allocation_ratio: expected a number'),
    (('hosts', 0, 'instances', 1, 'flavor'), 'xl',
     "hosts[0].instances[1].flavor: unknown flavor 'xl' (known: m)"),
    (('hosts', 0, 'instances', 0, 'preemptible'), 'yes',
     'hosts[0].instances[0].preemptible: expected true or false'),
    (('hosts', 0, 'instances', 1, 'uuid'), 'u1',
     "hosts[0].instances[1].uuid: instance 'u1' appears twice"),
    (('hosts', 0, 'instances', 0, 'launched_at'), KeyError,
     "hosts[0].instances[0]: missing field 'launched_at'"),
    (('flavors', 'm', 'tier'), 1.5,
     'flavors.m.tier: expected a whole number >= 0'),
    (('flavors', 'm', 'tier'), -1, 'flavors.m.tier: must be >= 0'),
    (('flavors', 'm', 'minimum_uptime'), 'long',
     'flavors.m.minimum_uptime: expected a number'),
    (('hosts', 0, 'instances', 0, 'project_id'), 7,
     'hosts[0].instances[0].project_id: expected a string'),
    (('budgets',), [], 'budgets: expected an object'),
    (('budgets',), {'window_seconds': 0},
     'budgets.window_seconds: must be > 0'),
    (('budgets',), {'window_seconds': 60,
                    'remaining_vcpu_minutes': {'p': 1.5}},
     'budgets.remaining_vcpu_minutes.p: expected a whole number'),
    (('budgets',), {'window_seconds': 60,
                    'remaining_vcpu_minutes': {'p': -1}},
     'budgets.remaining_vcpu_minutes.p: must be >= 0'),
])
def test_errors_name_the_field(path, value, message):
    with pytest.raises(snapshot.SnapshotError) as exc:
        snapshot.parse(_broken(path, value))
    assert message in str(exc.value)


def test_duplicate_host_names_are_refused():
    data = copy.deepcopy(GOOD)
    data['hosts'].append(dict(data['hosts'][0], instances=[]))
    with pytest.raises(snapshot.SnapshotError, match="hosts\\[1\\].name"):
        snapshot.parse(data)


def test_unreadable_and_invalid_files(tmp_path):
    with pytest.raises(snapshot.SnapshotError, match='cannot read snapshot'):
        snapshot.load(tmp_path / 'missing.json')
    bad = tmp_path / 'bad.json'
    bad.write_text('{"now": \n')
    with pytest.raises(snapshot.SnapshotError, match='line 2'):
        snapshot.load(bad)
    good = tmp_path / 'good.json'
    good.write_text(json.dumps(GOOD))
    assert snapshot.load(good).hosts[0].name == 'h1'


HOST = json.dumps(GOOD)


@pytest.mark.parametrize('content, message', [
    (HOST.replace('"vcpus": 8', '"vcpus": 1%s' % ('0' * 400), 1),
     'a number with more than 18 digits'),
    (HOST.replace('"vcpus": 8', '"vcpus": 1%s' % ('0' * 5000), 1),
     'a number with more than 18 digits'),
    (HOST.replace('"vcpus": 8', '"vcpus": 1e400', 1),
     'a number with more than 18 digits'),
    (HOST.replace('"vcpus": 8', '"vcpus": Infinity', 1),
     'Infinity is not a number JSON allows'),
    (HOST.replace('"vcpus": 8', '"vcpus": NaN', 1),
     'NaN is not a number JSON allows'),
    ('[' * 100000 + ']' * 100000, 'nested too deeply'),
    (HOST.replace('"h1"', '"h\u00f4te"').encode('latin-1'),
     'not UTF-8 text'),
    (HOST.replace('"flavor": "m"', '"flavor": "tiny"', 1),
     "hosts[0].instances[0].flavor: unknown flavor 'tiny'"),
])
def test_hostile_files_are_refused_in_one_line_naming_the_file(
        tmp_path, content, message):
    """A snapshot file may come from anywhere and hold anything."""
    path = tmp_path / 'snap.json'
    if isinstance(content, str):
        content = content.encode('utf-8')
    path.write_bytes(content)

    with pytest.raises(snapshot.SnapshotError) as exc_info:
        snapshot.load(path)

    [line] = str(exc_info.value).splitlines()
    assert line.startswith('snapshot %s: ' % path)
    assert message in line


def test_an_endless_file_is_refused_after_max_bytes(monkeypatch):
    monkeypatch.setattr(snapshot, 'MAX_BYTES', 1024)

    with pytest.raises(snapshot.SnapshotError) as exc_info:
        snapshot.load('/dev/zero')

    assert str(exc_info.value) == 'snapshot /dev/zero: larger than 1024 bytes'
