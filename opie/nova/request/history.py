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

"""The preemptions kept in Nova's database, read back.

Each victim's ``opie-preempt`` instance action holds one event
``opie_preempt`` whose ``details`` are its preemption's explanation
(:mod:`.terminate`, :mod:`opie.core.explain`). :func:`read` finds them in
every cell: one query per cell, joining Nova's instance action and event
tables on the action, filtered by event name, and by time and host (the
event's host: where the victim was) in the database, as Nova's own
database API reads them. Cell0 holds only instances that never had a host,
never a victim: it is skipped.

An explanation lasts as long as Nova keeps its victim's actions: ``nova-manage
db archive_deleted_rows`` moves a deleted server's actions to the shadow
tables, which Nova (and this) no longer read, and ``nova-manage db purge``
removes them.
"""
import dataclasses
import datetime

from nova import context as nova_context
from nova.db.main import api as db_api
from nova.db.main import models
from nova import objects

from opie.core import explain

# As written by :mod:`.terminate` (not imported from there: reading the
# history needs none of Nova's compute API).
ACTION = 'opie-preempt'
EVENT = 'opie_preempt'


@dataclasses.dataclass(frozen=True)
class Kept:
    """One victim's kept explanation: ``explanation`` None if its details
    are no explanation (not JSON)."""
    victim: str
    time: datetime.datetime
    host: str | None
    cell: str
    explanation: dict | None
    # The victim's project, from its action row: found by ``--project``
    # even where the explanation lists only its first victims.
    project: str | None = None


def read(context, since=None, until=None, host=None):
    """Every victim's :class:`Kept`, from every cell, oldest first:
    those whose event began at ``since`` or later, before ``until`` (aware
    datetimes, or None), on ``host`` (None: any)."""
    found = []
    for cell in objects.CellMappingList.get_all(context):
        if cell.is_cell0():
            continue
        with nova_context.target_cell(context, cell) as cctxt:
            found += [Kept(uuid, start.replace(tzinfo=datetime.timezone.utc),
                           where, cell.name or cell.uuid,
                           explain.loads(details), project)
                      for uuid, start, where, details, project in _rows(
                          cctxt, _naive(since), _naive(until), host)]
    return sorted(found, key=lambda kept: (kept.time, kept.victim))


def _naive(moment):
    """``moment`` as Nova stores times: naive UTC."""
    if moment is None:
        return None
    return moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)


@db_api.pick_context_manager_reader
def _rows(context, since, until, host):
    action, event = models.InstanceAction, models.InstanceActionEvent
    query = context.session.query(
        action.instance_uuid, event.start_time, event.host, event.details,
        action.project_id
    ).join(event, event.action_id == action.id).filter(
        action.action == ACTION, event.event == EVENT)
    if since is not None:
        query = query.filter(event.start_time >= since)
    if until is not None:
        query = query.filter(event.start_time < until)
    if host is not None:
        query = query.filter(event.host == host)
    return query.all()
