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

"""Every source file carries the Apache License header, as every OpenStack
project's do: the project's Python, and the shell DevStack and CI run.

An empty ``__init__.py`` needs none; a script keeps its ``#!`` line first.
"""
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PYTHON = ('opie', 'tests', 'benchmarks', 'tools', 'doc/source',
          'releasenotes/source')
SHELL = ('.ci/run', 'devstack/plugin.sh', 'devstack/settings',
         'tests/unit/devstack/fake_devstack.sh')
HEADER = '''\
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
'''


def sources():
    # setup.py and any other script at the top.
    yield from sorted(ROOT.glob('*.py'))
    for top in PYTHON:
        yield from sorted(path for path in (ROOT / top).rglob('*.py')
                          if '__pycache__' not in path.parts)
    for name in SHELL:
        yield ROOT / name


def has_header(text):
    if text.startswith('#!'):
        text = text.partition('\n')[2]
    return text.startswith(HEADER)


def test_every_source_file_has_the_header():
    missing = [str(path.relative_to(ROOT)) for path in sources()
               if path.read_text().strip()
               and not has_header(path.read_text())]
    assert missing == []


def test_the_check_sees_a_missing_or_a_changed_header():
    assert has_header(HEADER + '"""Doc."""\n')
    assert has_header('#!/bin/bash\n' + HEADER)
    assert not has_header('"""Doc."""\n' + HEADER)
    assert not has_header(HEADER.replace('2.0', '3.0'))
