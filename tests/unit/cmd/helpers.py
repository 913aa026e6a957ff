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

"""Running ``opie-manage`` in the command tests."""
from opie.cmd import manage


def run(capsys, *args, command):
    """``opie-manage COMMAND ARGS...``: (exit code, stdout, stderr)."""
    try:
        code = manage.main([command] + list(args))
    except SystemExit as exc:  # argparse's refusals
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *args, command, prefix='opie-manage'):
    """The one line of a refusal, which starts with ``prefix``."""
    code, out, err = run(capsys, *args, command=command)
    assert (code, out) == (2, '')
    assert len(err.splitlines()) == 1, err
    assert err.startswith(prefix), err
    return err
