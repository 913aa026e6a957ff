"""``opie-manage plan`` as operators run it."""
import json
import pathlib
import subprocess
import sys

import pytest

from opie.cmd import manage

SNAPSHOTS = pathlib.Path(__file__).parents[3] / 'examples' / 'snapshots'


def _run(capsys, *args):
    rc = manage.main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def _names(table, uuids):
    snap = json.loads((SNAPSHOTS / ('paper-table%d.json' % table))
                      .read_text())
    by_uuid = {i['uuid']: i['name'] for h in snap['hosts']
               for i in h['instances']}
    return sorted(by_uuid[u] for u in uuids)


@pytest.mark.parametrize('table, flavor, host, victims', [
    (3, 'medium', 'host-B', ['BP1']),
    (4, 'medium', 'host-C', ['CP1']),
    (5, 'large', 'host-A', ['AP2', 'AP3', 'AP4']),
    (6, 'medium', 'host-B', ['BP3']),
])
def test_paper_tables_as_json(capsys, table, flavor, host, victims):
    rc, out, _ = _run(capsys, 'plan', '--snapshot',
                      str(SNAPSHOTS / ('paper-table%d.json' % table)),
                      '--flavor', flavor, '--format', 'json')
    result = json.loads(out)
    assert rc == 0
    assert result['host'] == host
    assert _names(table, result['victims']) == victims
    assert result['ranking'][0]['host'] == host
    assert set(result) >= {'host', 'victims', 'cost', 'ranking'}


def test_table5_costs_55_minutes_and_the_table_names_victims(capsys):
    rc, out, _ = _run(capsys, 'plan', '--snapshot',
                      str(SNAPSHOTS / 'paper-table5.json'),
                      '--vcpus', '4', '--memory-mb', '8000', '--disk-gb', '80')
    assert rc == 0
    assert 'Selected host-A: preempt AP4, AP3, AP2 (cost 3300)' in out


def test_no_host_exits_1_with_one_line(capsys):
    rc, out, err = _run(capsys, 'plan', '--snapshot',
                        str(SNAPSHOTS / 'paper-table5.json'),
                        '--flavor', 'large', '--preemptible',
                        '--format', 'json')
    assert rc == 1
    assert json.loads(out)['host'] is None
    assert len(err.strip().splitlines()) == 1
    assert 'no host can take the preemptible request' in err


@pytest.mark.parametrize('args, message', [
    (['--flavor', 'xlarge'], "unknown flavor 'xlarge'"),
    (['--vcpus', '2'], '--vcpus needs --memory-mb and --disk-gb'),
    (['--flavor', 'small', '--memory-mb', '5'], 'go with --vcpus'),
    (['--flavor', 'small', '--cost', 'bogus'],
     "--cost: unknown cost plugin 'bogus'"),
    (['--flavor', 'small', '--period-seconds', '0'],
     'billing period must be > 0'),
])
def test_bad_requests_exit_2(capsys, args, message):
    rc, _, err = _run(capsys, 'plan', '--snapshot',
                      str(SNAPSHOTS / 'paper-table3.json'), *args)
    assert rc == 2
    assert message in err
    assert 'Traceback' not in err


def test_malformed_snapshot_exits_2_naming_the_field(tmp_path, capsys):
    data = json.loads((SNAPSHOTS / 'paper-table6.json').read_text())
    data['hosts'][2]['instances'][0]['flavor'] = 'tiny'
    path = tmp_path / 'snap.json'
    path.write_text(json.dumps(data))
    rc, _, err = _run(capsys, 'plan', '--snapshot', str(path),
                      '--flavor', 'medium')
    assert rc == 2
    assert "hosts[2].instances[0].flavor: unknown flavor 'tiny'" in err


def test_console_script_runs_without_traceback():
    proc = subprocess.run(
        [sys.executable, '-m', 'opie.cmd.manage', 'plan', '--snapshot',
         '/nonexistent.json', '--flavor', 'small'],
        capture_output=True, text=True)
    assert proc.returncode == 2
    assert 'cannot read snapshot /nonexistent.json' in proc.stderr
    assert 'Traceback' not in proc.stderr
