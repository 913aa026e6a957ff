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

"""Reading nova.conf without Nova."""
import subprocess
import sys

import pytest

from opie.cmd import errors
from opie.cmd import nova_conf


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_later_files_win_and_multi_lines_add_up(tmp_path):
    first = _write(tmp_path, 'a.conf', '[DEFAULT]\nstate_path = /var/lib/n\n'
                   'cpu_allocation_ratio = 8\n'
                   '[filter_scheduler]\navailable_filters = x.all\n'
                   'available_filters = y.One\n')
    second = _write(tmp_path, 'b.conf', '[DEFAULT]\ncpu_allocation_ratio = 2'
                    '\n[opie]\ntermination_mode = shelve\n')

    conf = nova_conf.load([first, second])

    assert conf.filter_scheduler.available_filters == ['x.all', 'y.One']
    assert conf.cpu_allocation_ratio == 2.0
    assert conf.opie.termination_mode == 'shelve'
    assert conf.opie.heartbeat_path == '/var/lib/n/opie-scheduler.heartbeat'
    assert conf.instances_path == '/var/lib/n/instances'


def test_ratios_fall_back_to_the_initial_ones_as_nova_does(tmp_path):
    conf = nova_conf.load([_write(tmp_path, 'n.conf', '[DEFAULT]\n'
                                  'ram_allocation_ratio = 1.5\n'
                                  'disk_allocation_ratio = 0.0\n'
                                  'initial_disk_allocation_ratio = 3\n'
                                  'reserved_host_disk_mb = 1\n')])

    assert nova_conf.allocation_ratios(conf) == (4.0, 1.5, 3.0)
    assert nova_conf.reserved(conf) == (0, 512, 1)


@pytest.mark.parametrize('text, message', [
    ('[opie]\nmax_victims = many\n',
     "[opie] max_victims: invalid literal for int() with base 10: 'many'"),
    ('[opie]\ntermination_mode = kill\n',
     "[opie] termination_mode: Valid values are [delete, shelve], but "
     "found 'kill'"),
    ('[DEFAULT]\nreserved_host_memory_mb = lots\n',
     '[DEFAULT] reserved_host_memory_mb: invalid literal'),
    ('[DEFAULT\n', 'Invalid section (must end with ])'),
])
def test_bad_files_name_the_option(tmp_path, text, message):
    path = _write(tmp_path, 'n.conf', text)

    with pytest.raises(errors.UsageError) as exc_info:
        nova_conf.load([path])

    assert message in str(exc_info.value)
    assert path in str(exc_info.value)


def test_reading_and_checking_never_import_nova():
    code = ('import sys\n'
            'from opie.cmd import audit, manage, nova_conf\n'
            'from opie.cmd import provider_config_command\n'
            'from opie.core import flavor_spec, provider_config\n'
            'print(sorted(m for m in sys.modules\n'
            '             if m == "nova" or m.startswith("nova.")))\n')

    out = subprocess.run([sys.executable, '-c', code], check=True,
                         capture_output=True, text=True).stdout

    assert out.strip() == '[]'
