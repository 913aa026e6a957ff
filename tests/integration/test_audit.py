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

"""``opie-manage audit`` on the lab (issue point 4): silent on the lab as
``up`` built it, precise about a compute started without OPIE's provider
config."""
from opie.lab import cli
from opie.lab import configs
from opie.lab import process
from opie.testing import lab

EXTRA = 'extra'


def audit(*args):
    return lab.opie_manage('audit', *args)


def test_audit_passes_on_the_lab():
    code, out = audit('--config-file', lab.LAB.etc / 'nova' / 'nova.conf',
                      '--role', 'scheduler', '--os-cloud', 'lab-admin')
    assert code == 0, out
    for index in range(1, lab.LAB.computes + 1):
        code, out = audit('--config-file',
                          configs.compute_conf(lab.LAB, index),
                          '--role', 'compute')
        assert code == 0, out


def _compute_service(admin, host):
    found = admin.services.list(host=host, binary='nova-compute')
    return found[0] if found else None


def test_audit_names_a_compute_without_provider_config():
    # One more compute, configured as the others except for OPIE.
    configs.nova_compute(lab.LAB, EXTRA)
    host = lab.LAB.compute_host(EXTRA)
    admin = lab.nova('lab-admin')
    cli.start_compute(lab.LAB, EXTRA)
    try:
        def reported():
            cli.discover_hosts(lab.LAB)
            return any(h.hypervisor_hostname == host
                       for h in admin.hypervisors.list())
        lab.wait_for('%s to report' % host, reported, interval=2)
        code, out = audit('--os-cloud', 'lab-admin')
        assert code == 1, out
        assert ('compute node %s: has no inventory of '
                'CUSTOM_PREEMPTIBLE_' % host) in out
        assert 'lab-compute-1' not in out

        code, out = audit('--config-file',
                          configs.compute_conf(lab.LAB, EXTRA),
                          '--role', 'compute')
        assert code == 1, out
        assert 'gives no inventory of CUSTOM_PREEMPTIBLE_VCPU' in out
    finally:
        name = 'compute-%s' % EXTRA
        process.stop(lab.LAB, {name: process.recorded(lab.LAB)[name]})
        service = _compute_service(admin, host)
        if service is not None:
            admin.services.delete(service.id)
