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

"""``opie-manage provider-config``: the compute's provider.yaml."""
import os

import pytest
import yaml

from opie.cmd import manage
from opie.cmd import provider_config_command
from opie.core import provider_config


def _run(capsys, *args):
    rc = manage.main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def test_command_takes_ratios_and_reserved_from_nova_conf(tmp_path,
                                                          capsys):
    conf = tmp_path / 'nova.conf'
    conf.write_text('[DEFAULT]\ncpu_allocation_ratio = 2.0\n'
                    'reserved_host_memory_mb = 1024\n'
                    'reserved_host_disk_mb = 1500\n')
    output = tmp_path / 'provider_config' / 'opie.yaml'

    rc, out, _ = _run(capsys, 'provider-config', '--config-file', str(conf),
                      '--vcpus', '8', '--memory-mb', '16384', '--disk-gb',
                      '100', '--output', str(output))

    assert rc == 0
    assert out.startswith('wrote %s: CUSTOM_PREEMPTIBLE_VCPU 8' % output)
    text = output.read_text()
    print(text)
    assert text.startswith('# CUSTOM_PREEMPTIBLE_* and CUSTOM_OPIE_HOST '
                           'inventory for OPIE')
    found = provider_config.custom_inventories(yaml.safe_load(text))
    assert found['CUSTOM_PREEMPTIBLE_VCPU']['allocation_ratio'] == 2.0
    # Nova's defaults where nova.conf says nothing.
    assert found['CUSTOM_PREEMPTIBLE_MEMORY_MB']['allocation_ratio'] == 1.0
    assert found['CUSTOM_PREEMPTIBLE_MEMORY_MB']['reserved'] == 1024
    # 1500 MB reserved disk is 2 GB, as Nova rounds it.
    assert found['CUSTOM_PREEMPTIBLE_DISK_GB']['reserved'] == 2
    assert oct(os.stat(output).st_mode & 0o777) == '0o644'
    assert [p.name for p in output.parent.iterdir()] == ['opie.yaml']


def test_command_detects_what_it_is_not_told(tmp_path, capsys):
    conf = tmp_path / 'nova.conf'
    conf.write_text('[DEFAULT]\ninstances_path = %s\n' % tmp_path)

    rc, out, _ = _run(capsys, 'provider-config', '--config-file', str(conf),
                      '--memory-mb', '4096')

    assert rc == 0
    found = provider_config.custom_inventories(yaml.safe_load(out))
    assert found['CUSTOM_PREEMPTIBLE_VCPU']['total'] == len(
        provider_config_command.online_cpus(None))
    assert found['CUSTOM_PREEMPTIBLE_MEMORY_MB']['total'] == 4096
    fs = os.statvfs(tmp_path)
    assert found['CUSTOM_PREEMPTIBLE_DISK_GB']['total'] == (
        fs.f_frsize * fs.f_blocks // 1024 ** 3)


def test_detected_memory_is_memtotal():
    with open('/proc/meminfo') as f:
        kib = int(f.readline().split()[1])

    assert provider_config_command.detect_memory_mb() == kib // 1024


@pytest.mark.parametrize('args, message', [
    (['--config-file', '/nonexistent/nova.conf'],
     'Failed to find some config files: /nonexistent/nova.conf'),
    (['--memory-mb', '1024', '--vcpus', '1', '--output',
      '/proc/opie/opie.yaml'], 'cannot write /proc/opie/opie.yaml'),
    (['--memory-mb', '256', '--vcpus', '1'],
     'CUSTOM_PREEMPTIBLE_MEMORY_MB: 512 reserved is more than the total '
     '256'),
])
def test_bad_input_exits_2_with_one_line(capsys, args, message):
    rc, _, err = _run(capsys, 'provider-config', '--disk-gb', '10', *args)

    assert rc == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_missing_instances_path_asks_for_disk_gb(tmp_path, capsys):
    conf = tmp_path / 'nova.conf'
    conf.write_text('[DEFAULT]\ninstances_path = /nonexistent/instances\n')

    rc, _, err = _run(capsys, 'provider-config', '--config-file', str(conf))

    assert rc == 2
    assert ('cannot size the disk of instances_path /nonexistent/instances '
            '(No such file or directory): give --disk-gb') in err


@pytest.mark.parametrize('args, message', [
    (['--vcpus', '0'], 'argument --vcpus: must be >= 1, got 0'),
    (['--vcpus', '8193'], 'argument --vcpus: must be <= 8192, got 8193'),
    # Placement refuses a total beyond a 32-bit integer.
    (['--memory-mb', '2147483648'],
     'argument --memory-mb: must be <= 2147483647, got 2147483648'),
])
def test_sizes_out_of_range_are_usage_errors(capsys, args, message):
    with pytest.raises(SystemExit) as exit_info:
        manage.main(['provider-config'] + args)

    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize('line, message', [
    ('cpu_allocation_ratio = nan', '[DEFAULT] cpu_allocation_ratio: nan is '
     'not a number >= 0'),
    ('ram_allocation_ratio = inf', '[DEFAULT] ram_allocation_ratio: inf is '
     'not a number >= 0'),
    ('initial_disk_allocation_ratio = -1', '[DEFAULT] '
     'initial_disk_allocation_ratio: -1.0 is not a number >= 0'),
    ('reserved_host_memory_mb = -512', '[DEFAULT] reserved_host_memory_mb: '
     '-512 is not a number >= 0'),
    ('reserved_host_cpus = -1', '[DEFAULT] reserved_host_cpus: -1 is not'),
])
def test_impossible_nova_conf_values_are_refused(tmp_path, capsys, line,
                                                 message):
    conf = tmp_path / 'nova.conf'
    conf.write_text('[DEFAULT]\n%s\n' % line)
    output = tmp_path / 'opie.yaml'

    rc, _, err = _run(capsys, 'provider-config', '--config-file', str(conf),
                      '--vcpus', '8', '--memory-mb', '16384', '--disk-gb',
                      '100', '--output', str(output))

    assert rc == 2
    assert err.startswith('opie-manage provider-config: error: %s: ' % conf)
    assert message in err and len(err.splitlines()) == 1
    assert not output.exists()


def test_unreadable_config_files_and_special_outputs_exit_2(tmp_path,
                                                            capsys):
    latin = tmp_path / 'latin.conf'
    latin.write_bytes(b'[DEFAULT]\n# caf\xe9\n')
    fifo = tmp_path / 'fifo.yaml'
    os.mkfifo(fifo)
    sizes = ['--vcpus', '8', '--memory-mb', '16384', '--disk-gb', '100']

    for args, message in (
            (['--config-file', str(latin)], '%s: not UTF-8 text' % latin),
            (['--config-file', str(tmp_path)],
             '%s: not a regular file' % tmp_path),
            (['--output', str(fifo)],
             'refusing to write %s: not a regular file' % fifo)):
        rc, _, err = _run(capsys, 'provider-config', *sizes, *args)

        assert rc == 2
        assert err.startswith('opie-manage provider-config: error: ')
        assert message in err and len(err.splitlines()) == 1
    assert fifo.is_fifo()


def test_config_dir_values_win(tmp_path, capsys):
    conf = tmp_path / 'nova.conf'
    conf.write_text('[DEFAULT]\ncpu_allocation_ratio = 2.0\n')
    conf_d = tmp_path / 'nova.conf.d'
    conf_d.mkdir()
    (conf_d / '10-ratio.conf').write_text(
        '[DEFAULT]\ncpu_allocation_ratio = 3.0\n')

    rc, out, _ = _run(capsys, 'provider-config', '--config-file', str(conf),
                      '--config-dir', str(conf_d), '--vcpus', '8',
                      '--memory-mb', '16384', '--disk-gb', '100')

    assert rc == 0
    found = provider_config.custom_inventories(yaml.safe_load(out))
    assert found['CUSTOM_PREEMPTIBLE_VCPU']['allocation_ratio'] == 3.0


def _sized(tmp_path, capsys, conf_text, *args):
    conf = tmp_path / 'nova.conf'
    conf.write_text(conf_text)
    rc, out, err = _run(capsys, 'provider-config', '--config-file',
                        str(conf), '--memory-mb', '4096', *args)
    return rc, provider_config.custom_inventories(
        yaml.safe_load(out)) if rc == 0 else err


def test_vcpus_are_the_shared_cpus_not_the_dedicated_ones(tmp_path, capsys):
    """The operator's host: 2 CPUs, one shared, one dedicated."""
    rc, found = _sized(tmp_path, capsys, '[compute]\ncpu_shared_set = 1\n'
                       'cpu_dedicated_set = 0\n', '--vcpus', '2',
                       '--disk-gb', '10')

    assert rc == 0
    assert found['CUSTOM_PREEMPTIBLE_VCPU']['total'] == 1
    assert 'CUSTOM_PREEMPTIBLE_PCPU' not in found


def test_dedicated_cpus_only_write_no_preemptible_vcpu(tmp_path, capsys):
    rc, found = _sized(tmp_path, capsys, '[compute]\ncpu_dedicated_set = '
                       '0-3\n', '--vcpus', '4', '--disk-gb', '10')

    assert rc == 0
    assert sorted(found) == ['CUSTOM_OPIE_HOST', 'CUSTOM_PREEMPTIBLE_DISK_GB',
                             'CUSTOM_PREEMPTIBLE_MEMORY_MB']


def _fake_ceph(tmp_path, monkeypatch, script):
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    ceph = bin_dir / 'ceph'
    ceph.write_text('#!/bin/sh\n' + script)
    ceph.chmod(0o755)
    monkeypatch.setenv('PATH', str(bin_dir))


RBD = ('[libvirt]\nimages_type = rbd\nimages_rbd_pool = vms\n'
       'rbd_user = nova\nimages_rbd_ceph_conf = /etc/ceph/c.conf\n')


def test_rbd_disk_is_asked_of_ceph_as_nova_asks(tmp_path, capsys,
                                                monkeypatch):
    _fake_ceph(tmp_path, monkeypatch,
               'echo "$@" > %s/args\n'
               'echo \'{"stats": {"total_bytes": %d}, '
               '"pools": [{"name": "vms", "stats": {}}]}\'\n'
               % (tmp_path, 2 * 1024 ** 4))

    rc, found = _sized(tmp_path, capsys, RBD, '--vcpus', '4')

    assert rc == 0
    assert found['CUSTOM_PREEMPTIBLE_DISK_GB']['total'] == 2048
    assert (tmp_path / 'args').read_text() == (
        'df --format=json --id nova --conf /etc/ceph/c.conf\n')


@pytest.mark.parametrize('conf_text, script, message', [
    (RBD, 'echo "auth failed" >&2; exit 1\n',
     "cannot size Ceph pool vms (Command '['ceph', 'df', '--format=json', "
     "'--id', 'nova', '--conf', '/etc/ceph/c.conf']' returned non-zero "
     "exit status 1.): give --disk-gb"),
    (RBD, 'echo "{}"\n', 'cannot size Ceph pool vms (ceph df gave no pools'),
    (RBD, 'echo \'{"stats": {"total_bytes": 1}, "pools": []}\'\n',
     'cannot size Ceph pool vms (Ceph has no pool vms'),
    (RBD, 'echo "not json"\n', 'cannot size Ceph pool vms (Expecting'),
    ('[libvirt]\nimages_type = lvm\nimages_volume_group = vg0\n', '',
     'images_type = lvm: Nova sizes the disk by volume group vg0'),
    ('[compute]\ncpu_shared_set = 0-4\ncpu_dedicated_set = 4-7\n', '',
     'must be disjoint, both name CPUs 4 (nova-compute will not start)'),
    ('[compute]\ncpu_shared_set = 0-3,^0-3\n', '',
     "cpu_shared_set: '0-3,^0-3' names no CPU"),
    ('[compute]\ncpu_shared_set = 2-9\n', '',
     'names CPUs 8,9 that are not online (online: 0,1,2,3,4,5,6,7)'),
    ('[compute]\ncpu_dedicated_set = 0-1\n[DEFAULT]\n'
     'reserved_host_cpus = 1\n', '', 'reserved_host_cpus cannot be set'),
    ('[libvirt]\nimages_type = zfs\n', '', 'images_type'),
])
def test_what_nova_would_not_report_exits_2(tmp_path, capsys, monkeypatch,
                                            conf_text, script, message):
    _fake_ceph(tmp_path, monkeypatch, script)

    rc, err = _sized(tmp_path, capsys, conf_text, '--vcpus', '8')

    assert rc == 2
    assert message in err and len(err.splitlines()) == 1


def test_no_ceph_command_asks_for_disk_gb(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv('PATH', str(tmp_path))

    rc, err = _sized(tmp_path, capsys, RBD, '--vcpus', '8')

    assert rc == 2
    assert "cannot size Ceph pool vms ([Errno 2] No such file or directory: "\
        "'ceph'): give --disk-gb" in err
