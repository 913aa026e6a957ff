#!/usr/bin/env python3
"""The README's quick start: ``python3 tools/quickstart.py demo|test``.

Needs only Python 3.11. Creates ``.venv`` next to this repository, installs
OPIE into it with Nova and Placement (the demo runs them in-process; ``test``
adds the test tools), then runs the demo or the whole test suite.
Re-running skips the install while setup.cfg and requirements.txt are
unchanged.
"""
import hashlib
import pathlib
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


# Unit and functional tests run in separate processes: Nova's functional
# fixtures monkey-patch the interpreter, which must not leak into the pure
# cores' tests. In the functional tests Nova's own WarningsFixture decides
# which warnings are errors; pytest's summary of Nova's many deprecation
# warnings would only bury the results. opie-bot's functional tests mostly
# wait for the client they drive, so they run beside the scheduler's (a
# quarter of the suite's time), their output following.
UNIT, BOT, SCHEDULER = 'tests/unit', 'tests/functional/bot', 'tests/functional'
OPTIONS = {UNIT: [], BOT: ['-p', 'no:warnings'],
           SCHEDULER: ['-p', 'no:warnings', '--ignore', BOT]}
# pytest's status when no test was selected: a process that runs none of
# the tests asked for (-k, or a path in another suite) has not failed.
NO_TESTS = 5


def _under(path, suite):
    return path == suite or path.startswith((suite + '/', suite + '::'))


def _targets(suite, paths):
    """What ``suite``'s process runs of the test ``paths`` asked for (all
    of it when none are)."""
    if not paths or any(_under(suite, p) for p in paths):
        return [suite]
    return [p for p in paths if _under(p, suite)
            and not (suite == SCHEDULER and _under(p, BOT))]


def _pytest(suite, targets, options, **kwargs):
    return start([str(BIN / 'python'), '-m', 'pytest'] + targets
                 + OPTIONS[suite] + options, **kwargs)


def _wait(processes):
    try:
        return [p.wait() for p in processes]
    except KeyboardInterrupt:
        # The terminal's ^C reached them too: let them report.
        return [p.wait() for p in processes]


def test():
    args = sys.argv[2:]
    paths = [a for a in args if a == 'tests' or a.startswith('tests/')]
    options = [a for a in args if a not in paths]
    runs = {suite: _targets(suite, paths) for suite in OPTIONS}
    if not any(runs.values()):
        print('quickstart test: %s: no unit or functional tests there (the '
              'lab runs tests/integration: python3 tools/lab.py test)'
              % ' '.join(paths), file=sys.stderr)
        return 2
    codes = _wait([_pytest(UNIT, runs[UNIT], options)] if runs[UNIT] else [])
    with tempfile.TemporaryFile() as log:
        functional = []
        if runs[BOT]:
            functional.append(_pytest(BOT, runs[BOT], options, stdout=log,
                                      stderr=subprocess.STDOUT))
        if runs[SCHEDULER]:
            functional.append(_pytest(SCHEDULER, runs[SCHEDULER], options))
        codes += _wait(functional)
        log.seek(0)
        sys.stdout.flush()
        sys.stdout.buffer.write(log.read())
        sys.stdout.flush()
    failed = [c for c in codes if c not in (0, NO_TESTS)]
    if failed:
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
