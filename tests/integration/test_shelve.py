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

"""Shelve-mode preemption end to end (issue 13 point 2).

The schedulers run with ``[opie] termination_mode = shelve``: a normal
boot on a full cloud shelves the cheapest preemptible server.  The
scheduler acts as Nova's ``[service_user]``; its token travels to the
victim's compute, whose driver uploads the server's disk to Glance
through Nova's image API (as a real driver does).  The owner finds the
server tagged, unshelves it once there is room, and the reconciler
deletes the snapshot, which its owner could not.
"""
import pytest

from opie.lab import cli
from opie.lab import configs
from opie.nova.periodic import heartbeat
from opie.testing import lab


def _heartbeats():
    return [heartbeat.read(str(path)) or {}
            for path in lab.heartbeat_paths()]


def _schedulers_in(mode):
    return all(beat.get('settings', {}).get('termination_mode') == mode
               for beat in _heartbeats())


@pytest.fixture
def shelve_mode():
    extra = lab.LAB.etc / 'nova' / 'opie-shelve.conf'
    configs.write_ini(extra, {'opie': {'termination_mode': 'shelve',
                                       'reconcile_interval': 5}})
    cli.restart_schedulers(lab.LAB, extra)
    lab.wait_for('the schedulers to run in shelve mode',
                 lambda: _schedulers_in('shelve'))
    yield
    cli.restart_schedulers(lab.LAB)
    lab.wait_for('the schedulers to run in delete mode',
                 lambda: _schedulers_in('delete'))


def _shelve_images(images, uuid):
    """The shelve snapshots of server ``uuid`` shared with the project of
    ``images`` (an openstacksdk image proxy)."""
    return [i for i in images.images(visibility='shared',
                                     member_status='all')
            if i.instance_uuid == uuid and i.name.endswith('-shelved')]


def test_a_victim_is_shelved_to_glance_and_its_owner_unshelves_it(
        shelve_mode):
    alpha = lab.nova('lab-alpha')
    _, youngest = lab.fill_with_preemptibles(alpha)

    beta = lab.nova('lab-beta')
    normal, = lab.boot(beta, 'normal', 'small')
    assert lab.settled({normal})[normal].status == 'ACTIVE'

    lab.wait_for('the victim to be shelved', lambda: alpha.servers.get(
        youngest).status == 'SHELVED_OFFLOADED')
    assert 'opie-preempted' in alpha.servers.get(youngest).tags
    # Shared with the owner's project, which sees it.
    images = lab.connect('lab-alpha').image
    snapshot, = _shelve_images(images, youngest)
    assert snapshot.status == 'active'
    # Real bytes, the server's disk, uploaded with the scheduler's token.
    assert snapshot.size > 0
    assert snapshot.visibility == 'shared'

    beta.servers.delete(normal)
    lab.wait_for('the normal server to go', lambda: normal not in {
        s.id for s in beta.servers.list()})
    alpha.servers.unshelve(youngest)
    lab.wait_for('the victim to come back', lambda: alpha.servers.get(
        youngest).status == 'ACTIVE')

    lab.wait_for('the reconciler to delete the snapshot',
                 lambda: not _shelve_images(images, youngest))
