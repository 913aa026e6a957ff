#!/usr/bin/env python3
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

"""The README's quick start: ``python3 tools/quickstart.py demo|test``.

Needs only Python 3.11. Creates ``.venv`` next to this repository, installs
OPIE into it with Nova and Placement (the demo runs them in-process; ``test``
adds the test tools), then runs the demo or the test suites: tox's ``py3``
(tests/unit), ``functional`` (tests/functional) and ``pep8``, their
commands read from tox.ini, style first and the functional tests last
(``test PATH... [pytest options]`` runs those paths of the first two
only).
Re-running skips the install while setup.cfg and requirements.txt are
unchanged.
"""
import configparser
import contextlib
import hashlib
import pathlib
import shlex
import subprocess
import sys
import tempfile
import venv

ROOT = pathlib.Path(__file__).resolve().parent.parent
VENV = ROOT / '.venv'
BIN = VENV / 'bin'
EXTRAS = {'demo': '[functional]', 'test': '[test,functional]'}


def _stamp(extras):
    digest = hashlib.sha256(extras.encode())
    for name in ('setup.cfg', 'requirements.txt'):
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def ensure_venv(extras, path=VENV):
    """OPIE with ``extras`` installed (editable) in the venv at ``path``."""
    if sys.version_info < (3, 11):
        sys.exit('OPIE needs Python 3.11 or newer; this is %s.'
                 % sys.version.split()[0])
    if not (path / 'bin' / 'python').exists():
        print('Creating %s ...' % path, flush=True)
        venv.EnvBuilder(with_pip=True).create(path)
    stamp_file = path / ('.opie-installed' + extras.replace(',', '-'))
    stamp = _stamp(extras)
    if stamp_file.exists() and stamp_file.read_text() == stamp:
        return
    print('Installing OPIE%s into %s (first run takes a few minutes) ...'
          % (extras, path), flush=True)
    pip = [str(path / 'bin' / 'python'), '-m', 'pip', 'install', '-q',
           '--disable-pip-version-check']
    subprocess.run(pip + ['-U', 'pip', 'setuptools', 'wheel'], check=True)
    subprocess.run(pip + ['-e', '%s%s' % (ROOT, extras)], check=True)
    stamp_file.write_text(stamp)


def start(argv, **kwargs):
    print('+ ' + ' '.join(argv), flush=True)
    return subprocess.Popen(argv, cwd=ROOT, **kwargs)


def run(argv):
    return start(argv).wait()


def demo():
    # The scheduler's decision on the OPIE paper's Table 5, then a tenant's
    # Bag-of-Tasks job on an in-process cloud whose servers get preempted.
    rc = run([str(BIN / 'opie-manage'), 'plan', '--snapshot',
              'examples/snapshots/paper-table5.json', '--flavor', 'large'])
    if rc != 0:
        return rc
    return run([str(BIN / 'opie-bot'), 'demo'])


# The suites are tox's environments py3, functional and pep8, read from
# tox.ini, so that this command (and CI, which runs it) runs exactly them.
SUITES = {'py3': 'testenv', 'functional': 'testenv:functional',
          'pep8': 'testenv:pep8'}
# The stages of a whole run, cheapest first, so that a failure is told
# within minutes: style (tox -e pep8), then the unit tests, then the
# functional tests; a stage that fails ends the run. The unit and
# functional tests run in separate processes (as in tox): Nova's
# functional fixtures monkey-patch the interpreter, which must not leak
# into the unit tests. Each suite is split between SHARDS processes (the
# root conftest's --shard), one a core of CI's two. opie-bot's functional
# tests mostly wait for the client they drive, so they run in a process
# of their own beside the functional shards. The first process's output
# of a stage comes as it runs, the others' after it.
BOT = 'tests/functional/bot'
SHARDS = 2
# pytest's status when no test was selected: a process that runs none of
# the tests asked for (-k, or a path in another suite) has not failed.
NO_TESTS = 5
# pytest's options whose value, the argument after them, may be a path
# under tests/ that is not a test to run.
VALUE_OPTIONS = ('--ignore', '--ignore-glob', '--deselect', '--rootdir',
                 '--confcutdir', '--basetemp', '--junitxml', '--phases',
                 '-c', '-k', '-m', '-p')


def suites():
    """Each suite's command as tox.ini gives it, ``{posargs}`` left out."""
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / 'tox.ini')
    return {suite: shlex.split(tox[section]['commands'].replace(
        '{posargs}', '')) for suite, section in SUITES.items()}


def _in_venv(command):
    return [str(BIN / command[0])] + command[1:]


def _split(command):
    """A pytest command as (the test directory it runs, the rest)."""
    [directory] = [a for a in command if a.startswith('tests')]
    return directory, [a for a in command if a != directory]


def _under(path, suite):
    return path == suite or path.startswith((suite + '/', suite + '::'))


def _sharded(command, extra=()):
    return [command + list(extra) + ['--shard', '%d/%d' % (shard, SHARDS)]
            for shard in range(1, SHARDS + 1)]


def _processes(commands):
    """The two stages of pytest processes, unit and functional: (test
    directory, a directory it leaves out or None, its command without the
    directory) of each, in the order they start."""
    unit, unit_command = _split(commands['py3'])
    functional, functional_command = _split(commands['functional'])
    return ([(unit, None, command) for command in _sharded(unit_command)],
            [(functional, BOT, command) for command in _sharded(
                functional_command, ['--ignore', BOT])]
            + [(BOT, None, functional_command)])


def _targets(directory, excluded, paths):
    """What the process of ``directory`` runs of the test ``paths`` asked
    for (all of it when none are)."""
    if not paths or any(_under(directory, p) for p in paths):
        return [directory]
    return [p for p in paths if _under(p, directory)
            and not (excluded and _under(p, excluded))]


def _wait(processes):
    try:
        return [p.wait() for p in processes]
    except KeyboardInterrupt:
        # The terminal's ^C reached them too: let them report.
        return [p.wait() for p in processes]


def _side_by_side(commands):
    """Run ``commands`` at once, the first's output on ours as it comes,
    each other's after it; their exit codes."""
    with contextlib.ExitStack() as stack:
        processes = [start(commands[0])]
        logs = []
        for command in commands[1:]:
            logs.append(stack.enter_context(tempfile.TemporaryFile()))
            processes.append(start(command, stdout=logs[-1],
                                   stderr=subprocess.STDOUT))
        codes = _wait(processes)
        sys.stdout.flush()
        for log in logs:
            log.seek(0)
            sys.stdout.buffer.write(log.read())
        sys.stdout.flush()
    return codes


def _failed(codes):
    return [c for c in codes if c not in (0, NO_TESTS)]


def _paths_and_options(args):
    """The test paths asked for, and the rest: a path that is an option's
    value (``--ignore tests/...``) stays with its option."""
    paths, options = [], []
    for previous, arg in zip([None] + args, args):
        is_path = arg == 'tests' or arg.startswith('tests/')
        if is_path and previous not in VALUE_OPTIONS:
            paths.append(arg)
        else:
            options.append(arg)
    return paths, options


def test():
    args = sys.argv[2:]
    if any(a == '--shard' or a.startswith('--shard=') for a in args):
        print('quickstart test: --shard: each of its processes runs a shard '
              'of its own; to run one shard, run pytest with --shard K/N',
              file=sys.stderr)
        return 2
    paths, options = _paths_and_options(args)
    commands = suites()
    stages = [[_in_venv(command) + targets + options
               for directory, excluded, command in stage
               for targets in [_targets(directory, excluded, paths)]
               if targets]
              for stage in _processes(commands)]
    if not any(stages):
        print('quickstart test: %s: no unit or functional tests there (the '
              'lab runs tests/integration: python3 tools/lab.py test)'
              % ' '.join(paths), file=sys.stderr)
        return 2
    if not args:
        # Style, as tox -e pep8 checks it, on a whole run only.
        stages.insert(0, [_in_venv(commands['pep8'])])
    stages = [stage for stage in stages if stage]
    codes = []
    for index, stage in enumerate(stages):
        codes += _side_by_side(stage)
        failed = _failed(codes)
        if failed:
            if index + 1 < len(stages):
                print('quickstart test: that stage failed (exit %d); the '
                      'later ones did not run' % failed[0], flush=True)
            return failed[0]
    return NO_TESTS if codes and set(codes) == {NO_TESTS} else 0


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in EXTRAS:
        sys.exit('usage: python3 tools/quickstart.py demo|test [pytest args]')
    what = sys.argv[1]
    try:
        ensure_venv(EXTRAS[what])
    except subprocess.CalledProcessError as exc:
        sys.exit('Installing into .venv failed (%s); see the pip output '
                 'above.' % exc)
    sys.exit(demo() if what == 'demo' else test())


if __name__ == '__main__':
    main()
