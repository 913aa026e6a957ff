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

"""``python3 tools/lab.py up|down|status|test|ci|storm``: the OPIE lab on a
fresh machine.

Needs only Python 3.11 (and root, the first time, for apt-get). Creates
the lab's own venv (``.lab/venv``, or ``$OPIE_LAB_DIR/venv``) with OPIE and
the OpenStack services, then runs ``opie-lab`` from it (see
:mod:`opie.lab.cli`). ``test`` runs the integration tests against a lab
that is up; ``ci`` brings the lab up, runs them and takes it down, and
when this machine cannot run the lab says so loudly and passes. ``storm``
runs the boot-storm benchmark (``benchmarks/storm.py``) on a lab that is
up.
"""
import os
import pathlib
import subprocess
import sys
import time

import quickstart

LAB = pathlib.Path(os.environ.get('OPIE_LAB_DIR',
                                  quickstart.ROOT / '.lab'))
VENV = LAB / 'venv'
# opie-lab's exit code when this machine cannot run the lab.
UNAVAILABLE = 3
CI_COMPUTES = '3'


def skipped(reason):
    banner = '!' * 72
    print('\n%s\nSKIPPED: lab could not start: %s\n%s' % (
        banner, reason, banner), flush=True)
    return 0


def run(argv):
    print('+ ' + ' '.join(argv), flush=True)
    return subprocess.run(argv, cwd=quickstart.ROOT).returncode


def opie_lab(*args):
    return run([str(VENV / 'bin' / 'opie-lab')] + list(args))


def integration_tests(args):
    """pytest on tests/integration, or on the test paths in ``args``."""
    paths = [] if any(a.startswith('tests/') for a in args) else [
        'tests/integration']
    return run([str(VENV / 'bin' / 'python'), '-m', 'pytest', '-p',
                'no:warnings'] + paths + list(args))


def ci(args):
    """Up, test, down; the lab's failures fail, a machine that cannot run
    it skips (loudly). Interrupted anywhere, even while the lab comes
    up, it takes down what came up."""
    t0 = time.monotonic()
    rc = None
    try:
        rc = opie_lab('up', '--computes', CI_COMPUTES)
        if rc == UNAVAILABLE:
            return skipped('opie-lab up found this machine unable to run it '
                           '(see above)')
        t_up = time.monotonic() - t0
        tests = integration_tests(args) if rc == 0 else rc
    finally:
        if rc != UNAVAILABLE:
            down = opie_lab('down')
    print('lab: up %.0f s, tests %.0f s' % (
        t_up, time.monotonic() - t0 - t_up), flush=True)
    return tests or down


def main():
    if len(sys.argv) < 2:
        sys.exit('usage: python3 tools/lab.py up|down|status|test|ci|storm '
                 '[args]')
    command, args = sys.argv[1], sys.argv[2:]
    os.environ['OPIE_LAB_DIR'] = str(LAB)
    try:
        quickstart.ensure_venv('[lab]', VENV)
    except (subprocess.CalledProcessError, OSError) as exc:
        message = 'installing the lab into %s failed (%s)' % (VENV, exc)
        if command == 'ci':
            sys.exit(skipped(message))
        sys.exit(message + '; see the pip output above.')
    if command == 'ci':
        try:
            sys.exit(ci(args))
        except KeyboardInterrupt:
            # ci took the lab down on its way out.
            sys.exit('lab ci: interrupted; the lab was taken down')
    if command == 'test':
        sys.exit(integration_tests(args))
    if command == 'storm':
        sys.exit(run([str(VENV / 'bin' / 'python'), 'benchmarks/storm.py']
                     + args))
    sys.exit(opie_lab(command, *args))


if __name__ == '__main__':
    main()
