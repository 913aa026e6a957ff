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

"""``python3 tools/lab.py ci``: up, test, down; interrupted wherever it is
(^C, even while the lab comes up), it takes down what came up."""
import importlib.util
import pathlib

import pytest

import opie

TOOLS = pathlib.Path(opie.__file__).parent.parent / 'tools'


@pytest.fixture
def lab(monkeypatch):
    """tools/lab.py, its opie-lab and pytest runs recorded, not run."""
    monkeypatch.syspath_prepend(str(TOOLS))
    spec = importlib.util.spec_from_file_location('lab', TOOLS / 'lab.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.ran = []

    def opie_lab(*args):
        return step(args[0])

    def integration_tests(args):
        return step('test')

    def step(name):
        module.ran.append(name)
        if module.codes.get(name) == 'interrupted':
            raise KeyboardInterrupt
        return module.codes.get(name, 0)

    module.codes = {}
    monkeypatch.setattr(module, 'opie_lab', opie_lab)
    monkeypatch.setattr(module, 'integration_tests', integration_tests)
    return module


def test_up_test_down(lab):
    assert lab.ci([]) == 0
    assert lab.ran == ['up', 'test', 'down']


def test_failing_tests_fail_and_the_lab_goes_down(lab):
    lab.codes['test'] = 1

    assert lab.ci([]) == 1
    assert lab.ran == ['up', 'test', 'down']


def test_a_machine_without_the_lab_skips(lab, capsys):
    lab.codes['up'] = lab.UNAVAILABLE

    assert lab.ci([]) == 0
    assert lab.ran == ['up']
    assert 'SKIPPED: lab could not start' in capsys.readouterr().out


@pytest.mark.parametrize('stopped_in', ['up', 'test'])
def test_interrupted_anywhere_it_goes_down(lab, stopped_in):
    lab.codes[stopped_in] = 'interrupted'

    with pytest.raises(KeyboardInterrupt):
        lab.ci([])
    assert lab.ran[-1] == 'down'


def test_interrupted_it_says_so_in_one_line_and_fails(lab, monkeypatch):
    monkeypatch.setattr(lab.quickstart, 'ensure_venv', lambda *a: None)
    monkeypatch.setattr('sys.argv', ['lab.py', 'ci'])
    lab.codes['test'] = 'interrupted'

    with pytest.raises(SystemExit) as exit:
        lab.main()
    assert lab.ran[-1] == 'down'
    assert exit.value.code == 'lab ci: interrupted; the lab was taken down'
