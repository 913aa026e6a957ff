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

"""``python3 tools/install_check.py``: OPIE installs into a production
Nova venv.

Builds the ``openstack-opie`` wheel of this checkout, makes a clean venv
with Nova 34 and only its runtime requirements (as a packaged deployment
has), installs the wheel into it without extras, and checks that:

* the scheduler plugin imports (``opie.nova.manager``) and
  ``opie-scheduler --help`` and ``opie-manage --help`` run;
* none of the test-only packages the demo, the lab and the functional
  tests need (``testtools``, ``oslotest``, ``wsgi_intercept``,
  ``swift``, ``pytest``) was pulled in;
* the development parts (``opie.testing`` and its in-process demo
  cloud) say what to install instead of failing with a traceback.

Takes a few minutes (Nova's dependencies come from the package index or
pip's cache). Prints one line per check and exits 1 if any failed.
"""
import pathlib
import subprocess
import sys
import tempfile
import venv

ROOT = pathlib.Path(__file__).resolve().parent.parent
TEST_ONLY = ('testtools', 'oslotest', 'wsgi_intercept', 'swift', 'pytest')


def run(argv, **kwargs):
    return subprocess.run([str(a) for a in argv], capture_output=True,
                          text=True, **kwargs)


def main():
    failed = 0
    with tempfile.TemporaryDirectory(prefix='opie-install-') as tmp:
        tmp = pathlib.Path(tmp)
        built = run([sys.executable, '-m', 'pip', 'wheel', '--no-deps',
                     '-q', '-w', tmp / 'wheels', ROOT])
        if built.returncode:
            sys.exit('building the wheel failed:\n' + built.stderr)
        wheel, = (tmp / 'wheels').glob('openstack_opie-*.whl')
        venv.EnvBuilder(with_pip=True).create(tmp / 'nova')
        python = tmp / 'nova' / 'bin' / 'python'
        for step in (['nova==34.*'], [wheel]):
            done = run([python, '-m', 'pip', 'install', '-q',
                        '--disable-pip-version-check'] + step)
            if done.returncode:
                sys.exit('pip install %s failed:\n%s'
                         % (step[0], done.stderr))
        checks = [
            ('the plugin imports', [python, '-c',
                                    'import opie.nova.manager']),
            ('opie-scheduler --help', [tmp / 'nova' / 'bin' /
                                       'opie-scheduler', '--help']),
            ('opie-manage --help', [tmp / 'nova' / 'bin' / 'opie-manage',
                                    '--help']),
            ('no test-only package', [python, '-c', (
                'import importlib.util, sys; found = [m for m in %r if '
                'importlib.util.find_spec(m)]; sys.exit("installed: %%s" '
                '%% found if found else 0)') % (TEST_ONLY,)]),
            ('opie-bot demo says what to install', [
                python, '-c', 'import sys; from opie.bot import cli; '
                'sys.exit(0 if cli.main(["demo"]) == 2 else 1)']),
        ]
        for what, argv in checks:
            done = run(argv)
            ok = done.returncode == 0
            failed += not ok
            print('%s %s%s' % ('ok  ' if ok else 'FAIL', what, '' if ok
                               else ': ' + (done.stderr or done.stdout)
                               .strip().splitlines()[-1]), flush=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
