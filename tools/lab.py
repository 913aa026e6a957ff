#!/usr/bin/env python3
"""``python3 tools/lab.py up|down|status|test``: the OPIE lab on a fresh
machine.

Needs only Python 3.11 (and root, the first time, for apt-get). Creates
the lab's own venv (``.lab/venv``, or ``$OPIE_LAB_DIR/venv``) with OPIE and
the OpenStack services, then runs ``opie-lab`` from it (see
:mod:`opie.lab.cli`). ``test`` runs the integration tests against a lab
that is up.
"""
import os
import pathlib
import subprocess
import sys

import quickstart

LAB = pathlib.Path(os.environ.get('OPIE_LAB_DIR',
                                  quickstart.ROOT / '.lab'))
VENV = LAB / 'venv'


def main():
    if len(sys.argv) < 2:
        sys.exit('usage: python3 tools/lab.py up|down|status|test [args]')
    try:
        quickstart.ensure_venv('[lab]', VENV)
    except subprocess.CalledProcessError as exc:
        sys.exit('Installing the lab into %s failed (%s); see the pip '
                 'output above.' % (VENV, exc))
    if sys.argv[1] == 'test':
        argv = [str(VENV / 'bin' / 'python'), '-m', 'pytest',
                '-p', 'no:warnings', 'tests/integration'] + sys.argv[2:]
    else:
        argv = [str(VENV / 'bin' / 'opie-lab')] + sys.argv[1:]
    os.chdir(quickstart.ROOT)
    os.environ['OPIE_LAB_DIR'] = str(LAB)
    os.execv(argv[0], argv)


if __name__ == '__main__':
    main()
