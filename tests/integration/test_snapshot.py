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

"""``opie-manage snapshot`` on the lab, then ``plan`` on that file, says
what the scheduler then does for the same request (issue 13 point 7)."""
import json

from opie.testing import lab


def opie_manage(*args):
    code, out = lab.opie_manage(*args)
    assert code == 0, out
    return out


def test_plan_on_a_snapshot_of_the_lab_is_what_the_scheduler_does(
        tmp_path):
    alpha = lab.nova('lab-alpha')
    lab.fill_with_preemptibles(alpha)
    path = tmp_path / 'lab.json'
    opie_manage('snapshot', '--os-cloud', 'lab-admin', '--output', str(path))
    planned = json.loads(opie_manage('plan', '--snapshot', str(path),
                                     '--flavor', 'small', '--format',
                                     'json'))
    assert len(planned['victims']) == 1, planned
    before = {s.id for s in alpha.servers.list()}

    beta = lab.nova('lab-beta')
    normal, = lab.boot(beta, 'normal', 'small')
    server = lab.settled({normal})[normal]

    assert server.status == 'ACTIVE'
    assert getattr(server, 'OS-EXT-SRV-ATTR:hypervisor_hostname') == \
        planned['host']
    lab.wait_for('the victim to be deleted', lambda: planned['victims'][0]
                 not in {s.id for s in alpha.servers.list()})
    assert before - {s.id for s in alpha.servers.list()} == \
        set(planned['victims'])
