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

"""Cloud snapshots: the JSON file ``opie-manage plan`` reasons about.

Format (documented in ``doc/source/operator/plan.rst``)::

    {"now": "2026-01-01T12:00:00Z",
     "flavors": {"medium": {"vcpus": 2, "memory_mb": 4000, "disk_gb": 40}},
     "hosts": [{"name": "host-A", "vcpus": 8, "memory_mb": 16384,
                "disk_gb": 500,
                "cpu_allocation_ratio": 1.0, "ram_allocation_ratio": 1.0,
                "disk_allocation_ratio": 1.0, "reserved_host_memory_mb": 0,
                "instances": [{"uuid": "...", "flavor": "medium",
                               "preemptible": true,
                               "launched_at": "2026-01-01T10:00:00Z"}]}]}

Optional per instance: ``name`` (shown in tables and used in tie-breaks),
``locked`` and ``task_state`` (a locked instance or one with a task in
progress is never a victim), ``project_id`` (whose budget it spends).
Optional per flavor, its terms: ``tier`` (an integer >= 0) and
``minimum_uptime`` (seconds). Optional at the top, what is left of the
preemption budgets at ``now``::

    "budgets": {"window_seconds": 86400,
                "remaining_vcpu_minutes": {"<project id>": 600}}

Every problem is reported as a :class:`SnapshotError` whose message names
the offending field.
:func:`load` is the one reader of snapshot files; it refuses what a
hostile file may hold before :func:`parse` validates the fields.
"""
import dataclasses
import datetime
import json
import math

from opie.core import budgets as budgets_mod
from opie.core import host as host_mod
from opie.core import preemptible as preemptible_mod
from opie.core import resources as res

RATIOS = ('cpu_allocation_ratio', 'ram_allocation_ratio',
          'disk_allocation_ratio')
# No amount in a cloud has more digits; Python refuses to even read a
# 4300-digit integer and float() overflows beyond 308.
MAX_DIGITS = 18
# A snapshot of 1000 hosts with 20 instances each is about 5 MB.
MAX_BYTES = 256 * 2 ** 20


class SnapshotError(ValueError):
    """The snapshot is malformed; the message names the field."""


@dataclasses.dataclass(frozen=True)
class Snapshot:
    now: datetime.datetime
    flavors: dict
    hosts: list
    # opie.core.budgets.Budgets, or None when the snapshot has none.
    budgets: object = None


@dataclasses.dataclass(frozen=True)
class _Terms:
    tier: int = 0
    minimum_uptime: float = 0.0


def load(path):
    """Read and validate a snapshot file.

    The file may come from anywhere, so it is read with limits: numbers of
    at most :data:`MAX_DIGITS` digits, no NaN or Infinity, nesting as deep
    as the JSON decoder goes. Every problem, whatever the file holds, is a
    :class:`SnapshotError` naming the file.
    """
    try:
        with open(path, 'rb') as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise SnapshotError('cannot read snapshot %s: %s'
                            % (path, exc.strerror or exc)) from None
    if len(raw) > MAX_BYTES:
        raise SnapshotError('snapshot %s: larger than %d bytes'
                            % (path, MAX_BYTES))
    try:
        data = json.loads(raw.decode('utf-8'), parse_int=_bounded(int),
                          parse_float=_bounded(float),
                          parse_constant=_constant)
        return parse(data)
    except UnicodeDecodeError as exc:
        problem = 'not UTF-8 text: %s at byte %d' % (exc.reason, exc.start)
    except json.JSONDecodeError as exc:
        problem = 'not valid JSON: %s (line %d, column %d)' % (
            exc.msg, exc.lineno, exc.colno)
    except RecursionError:
        problem = 'nested too deeply'
    except ValueError as exc:
        # _bounded's and _constant's, and parse's naming the field.
        problem = str(exc)
    raise SnapshotError('snapshot %s: %s' % (path, problem))


def _bounded(kind):
    """A JSON number parser refusing more than :data:`MAX_DIGITS` digits
    (before the exponent) or magnitude."""
    def parse_number(text):
        digits = text.lstrip('-').lower().partition('e')[0]
        # Counted before converting: int() refuses 4300 digits itself.
        if (len(digits.replace('.', '').lstrip('0')) > MAX_DIGITS
                or not abs(kind(text)) < 10 ** MAX_DIGITS):
            raise ValueError('a number with more than %d digits: %s...'
                             % (MAX_DIGITS, text[:MAX_DIGITS + 2]))
        return kind(text)
    return parse_number


def _constant(name):
    raise ValueError('%s is not a number JSON allows' % name)


def parse(data):
    _expect(data, dict, 'snapshot', 'an object')
    now = _timestamp(_field(data, 'now', 'snapshot'), 'now')
    flavors, terms = _flavors(_field(data, 'flavors', 'snapshot'))
    hosts_data = _field(data, 'hosts', 'snapshot')
    _expect(hosts_data, list, 'hosts', 'a list')
    hosts, names, uuids = [], set(), set()
    for index, item in enumerate(hosts_data):
        host = _host(item, 'hosts[%d]' % index, flavors, terms, uuids)
        if host.name in names:
            raise SnapshotError('hosts[%d].name: host %r appears twice'
                                % (index, host.name))
        names.add(host.name)
        hosts.append(host)
    return Snapshot(now, flavors, hosts, _budgets(data.get('budgets')))


def _budgets(data):
    if data is None:
        return None
    _expect(data, dict, 'budgets', 'an object')
    window = _number(data, 'window_seconds', 'budgets', positive=True)
    remaining = data.get('remaining_vcpu_minutes', {})
    _expect(remaining, dict, 'budgets.remaining_vcpu_minutes',
            'an object of project id: vCPU-minutes')
    for project, minutes in remaining.items():
        _expect(minutes, int, 'budgets.remaining_vcpu_minutes.%s' % project,
                'a whole number of vCPU-minutes')
        _number(remaining, project, 'budgets.remaining_vcpu_minutes')
    return budgets_mod.Budgets(window, remaining)


def _field(obj, key, where):
    if key not in obj:
        raise SnapshotError('%s: missing field %r' % (where, key))
    return obj[key]


def _expect(value, kind, where, what):
    if not isinstance(value, kind) or (kind is not bool
                                       and isinstance(value, bool)):
        raise SnapshotError('%s: expected %s, got %s'
                            % (where, what, json.dumps(value)[:60]))


def _number(obj, key, where, default=None, positive=False):
    if key not in obj and default is not None:
        return default
    value = _field(obj, key, where)
    name = '%s.%s' % (where, key)
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value)):
        raise SnapshotError('%s: expected a number, got %s'
                            % (name, json.dumps(value)[:60]))
    if value < 0 or (positive and value == 0):
        raise SnapshotError('%s: must be %s, got %s' % (
            name, '> 0' if positive else '>= 0', value))
    return value


def _timestamp(value, where):
    _expect(value, str, where, 'an ISO-8601 timestamp string')
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise SnapshotError('%s: %r is not an ISO-8601 timestamp'
                            % (where, value)) from None
    return host_mod.utc(moment)


def _resources(obj, where, cpu='vcpus', ram='memory_mb', disk='disk_gb'):
    return res.Resources(_number(obj, cpu, where),
                         _number(obj, ram, where),
                         _number(obj, disk, where))


def _flavors(data):
    _expect(data, dict, 'flavors', 'an object of name: {vcpus, memory_mb, '
            'disk_gb}')
    flavors, terms = {}, {}
    for name, spec in data.items():
        where = 'flavors.%s' % name
        _expect(spec, dict, where, 'an object')
        flavors[name] = _resources(spec, where)
        tier = spec.get('tier', 0)
        _expect(tier, int, where + '.tier', 'a whole number >= 0')
        terms[name] = _Terms(_number(spec, 'tier', where, default=0),
                             _number(spec, 'minimum_uptime', where,
                                     default=0.0))
    return flavors, terms


def _host(data, where, flavors, terms, uuids):
    _expect(data, dict, where, 'an object')
    name = _field(data, 'name', where)
    _expect(name, str, where + '.name', 'a string')
    total = _resources(data, where)
    ratios = res.Resources(*(_number(data, r, where, default=1.0)
                             for r in RATIOS))
    reserved = res.Resources(
        0, _number(data, 'reserved_host_memory_mb', where, default=0), 0)
    capacity = host_mod.capacity(total, ratios, reserved)
    instances_data = data.get('instances', [])
    _expect(instances_data, list, where + '.instances', 'a list')
    instances = [_instance(item, '%s.instances[%d]' % (where, i), flavors,
                           terms, uuids)
                 for i, item in enumerate(instances_data)]
    return host_mod.Host.from_instances(name, capacity, instances)


def _instance(data, where, flavors, terms, uuids):
    _expect(data, dict, where, 'an object')
    uuid = _field(data, 'uuid', where)
    _expect(uuid, str, where + '.uuid', 'a string')
    if uuid in uuids:
        raise SnapshotError('%s.uuid: instance %r appears twice'
                            % (where, uuid))
    uuids.add(uuid)
    flavor = _field(data, 'flavor', where)
    _expect(flavor, str, where + '.flavor', 'a flavor name')
    if flavor not in flavors:
        raise SnapshotError('%s.flavor: unknown flavor %r (known: %s)' % (
            where, flavor, ', '.join(sorted(flavors)) or 'none'))
    preemptible = data.get('preemptible', False)
    _expect(preemptible, bool, where + '.preemptible', 'true or false')
    launched = _timestamp(_field(data, 'launched_at', where),
                          where + '.launched_at')
    locked = data.get('locked', False)
    _expect(locked, bool, where + '.locked', 'true or false')
    # A lock of unknown origin protects, as an operator's would.
    locked_by = data.get('locked_by', preemptible_mod.ADMIN_LOCK)
    if locked_by not in ('owner', preemptible_mod.ADMIN_LOCK):
        raise SnapshotError('%s.locked_by: %r is neither "owner" nor '
                            '"admin"' % (where, locked_by))
    task_state = data.get('task_state')
    if task_state is not None:
        _expect(task_state, str, where + '.task_state', 'a string or null')
    name = data.get('name', '')
    _expect(name, str, where + '.name', 'a string')
    project_id = data.get('project_id', '')
    _expect(project_id, str, where + '.project_id', 'a string')
    return host_mod.Instance(uuid, flavors[flavor], preemptible, launched,
                             eligible=preemptible_mod.may_be_victim(
                                 locked_by if locked else None, task_state),
                             name=name, project_id=project_id,
                             tier=terms[flavor].tier,
                             minimum_uptime=terms[flavor].minimum_uptime)
