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

"""doc/source/operator/rollback.rst followed on the lab (issue 24).

From a cloud full of preemptible servers to Nova's stock
``nova-scheduler`` with every compute restarted without OPIE, step by
step as the document says, then a normal server and a server of a former
preemptible flavor booted by stock Nova; then OPIE installed again as
``opie-lab up`` installs it (the DevStack plugin's commands), preempting
again. The schedulers beat every 10 s here, so that "two heartbeat
intervals" is 20 s.
"""
import pytest

from opie.lab import cli
from opie.lab import configs
from opie.testing import lab

NOVA_CONF = lab.LAB.etc / 'nova' / 'nova.conf'
# Step 1 makes this flavor a normal one.
FORMER = 'small-preemptible'
ROLLBACK = ('rollback', '--os-cloud', 'lab-admin', '--preemptibles',
            'delete')


def _heartbeat_files():
    """--heartbeat-file of each scheduler host but the first, whose
    heartbeat --config-file names."""
    args = []
    for path in lab.heartbeat_paths()[1:]:
        args += ['--heartbeat-file', path]
    return args


def _opie_extra_specs(flavor):
    return [key for key in flavor.get_keys()
            if key.startswith(('opie:', 'resources:'))]


def _reinstall():
    """OPIE as ``opie-lab up`` installs it: Nova's files as up writes
    them, OPIE's settings and provider configs, the computes restarted,
    ``opie-scheduler``, and FORMER a preemptible flavor again."""
    configs.nova(lab.LAB)
    for index in range(1, lab.LAB.computes + 1):
        configs.nova_compute(lab.LAB, index)
    cli.configure_opie(lab.LAB)
    lab.restart_computes()
    lab.restart_schedulers()
    flavor = lab.nova('lab-admin').flavors.find(name=FORMER)
    flavor.set_keys({'opie:preemptible': 'true'})
    code, out = lab.opie_manage('flavor', 'set-preemptible', FORMER,
                                '--os-cloud', 'lab-admin')
    assert code == 0, out


@pytest.fixture
def quick_heartbeats():
    extra = lab.LAB.etc / 'nova' / 'opie-rollback.conf'
    configs.write_ini(extra, {'opie': {'heartbeat_interval': 10}})
    lab.restart_schedulers(extra)
    done = []
    yield done.append
    if not done:
        # The lab as up built it, for the tests after this one.
        lab.delete_all()
        _reinstall()


def _allocation(server_id):
    """{resource class: amount} the server holds in Placement."""
    held = {}
    for allocation in lab.placement().get(
            '/allocations/%s' % server_id).json()['allocations'].values():
        held.update(allocation['resources'])
    return held


def test_rollback_to_stock_nova_then_reinstall(quick_heartbeats):
    fill = lab.fill_cloud()
    admin = lab.nova('lab-admin')

    # 1. No new preemptible server of FORMER: it becomes a normal flavor.
    flavor = admin.flavors.find(name=FORMER)
    flavor.unset_keys(_opie_extra_specs(flavor))

    # Step 4 too early: refused while an OPIE scheduler runs.
    code, out = lab.opie_manage(*ROLLBACK, '--config-file', NOVA_CONF,
                                *_heartbeat_files())
    assert code == 2 and len(out.splitlines()) == 1, out
    assert 'opie-scheduler still runs' in out, out

    # 2. The stock scheduler, OPIE's filter kept: safe mode.
    cli.restart_schedulers(lab.LAB, binary='nova-scheduler')

    # 4. Once no OPIE scheduler has beaten for two intervals.
    def rolled_back():
        code, out = lab.opie_manage(*ROLLBACK, '--config-file', NOVA_CONF,
                                    *_heartbeat_files())
        # Refused while the heartbeats are younger than two intervals.
        still = code == 2 and 'opie-scheduler still runs' in out
        return None if still else [(code, out)]
    (code, out), = lab.wait_for('the rollback to run', rolled_back)
    assert code in (0, 1), out
    assert not set(lab.settled(set(fill))), out
    assert 'PreemptibleFilter' not in NOVA_CONF.read_text()
    cli.restart_schedulers(lab.LAB, binary='nova-scheduler')

    # 5. Each compute without its provider config, restarted.
    for index in range(1, lab.LAB.computes + 1):
        provider_dir = configs.provider_dir(lab.LAB, index)
        (provider_dir / 'opie.yaml').unlink()
        code, out = lab.opie_manage(
            'nova-conf', 'compute', '--config-file',
            configs.compute_conf(lab.LAB, index), '--provider-config-dir',
            provider_dir, '--remove')
        assert code == 0, out
    lab.restart_computes()

    # 6. Again: nothing of OPIE left.
    code, out = lab.opie_manage('rollback', '--os-cloud', 'lab-admin',
                                '--force')
    assert code == 0, out
    assert out.splitlines()[-1] == 'nothing of OPIE is left in Placement'

    # Stock Nova serves a normal flavor and the former preemptible one,
    # which now asks Placement for standard classes.
    beta = lab.nova('lab-beta')
    servers = lab.boot(beta, 'normal', 'medium') + lab.boot(
        beta, 'former', FORMER)
    assert {s.status for s in lab.settled(set(servers)).values()} == {
        'ACTIVE'}
    assert _allocation(servers[1]) == {
        'VCPU': 1, 'MEMORY_MB': 2048, 'DISK_GB': 10}
    lab.delete_all()

    # OPIE again: a normal boot on a full cloud preempts.
    _reinstall()
    quick_heartbeats(True)
    _, youngest = lab.fill_with_preemptibles(lab.nova('lab-alpha'))
    normal, = lab.boot(beta, 'normal', 'small')
    assert lab.settled({normal})[normal].status == 'ACTIVE'
    assert lab.actions(youngest).count('opie-preempt') == 1
