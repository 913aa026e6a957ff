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

"""The README's test command runs tox's suites, read from tox.ini: style,
then the unit tests (shared between two processes), then the functional
tests (shared between two processes, opie-bot's in a third beside them);
a stage that fails ends the run."""
import importlib.util
import pathlib
import types

import pytest

import opie

ROOT = pathlib.Path(opie.__file__).parent.parent
SPEC = importlib.util.spec_from_file_location(
    'quickstart', ROOT / 'tools' / 'quickstart.py')
quickstart = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(quickstart)
TOX = """\
[testenv]
commands =
    python -m pytest -x tests/unit {posargs}
[testenv:functional]
commands =
    python -m pytest -q tests/functional {posargs}
[testenv:pep8]
commands =
    flake8 opie
"""
# What a whole run starts, in this order: style, unit, functional.
WHOLE_RUN = [
    'bin/flake8 opie',
    'bin/python -m pytest -x --shard 1/2 tests/unit',
    'bin/python -m pytest -x --shard 2/2 tests/unit',
    'bin/python -m pytest -q --ignore tests/functional/bot --shard 1/2 '
    'tests/functional',
    'bin/python -m pytest -q --ignore tests/functional/bot --shard 2/2 '
    'tests/functional',
    'bin/python -m pytest -q tests/functional/bot']


class Started(list):
    """The commands started, and the exit code each is to give."""


@pytest.fixture
def started(tmp_path, monkeypatch):
    """The commands ``quickstart test`` starts, with tmp_path's tox.ini."""
    (tmp_path / 'tox.ini').write_text(TOX)
    monkeypatch.setattr(quickstart, 'ROOT', tmp_path)
    monkeypatch.setattr(quickstart, 'BIN', tmp_path / 'bin')
    argvs = Started()
    codes = {}

    def start(argv, **kwargs):
        argvs.append(' '.join(argv).replace(str(tmp_path) + '/', ''))
        code = codes.get(argvs[-1], 0)
        return types.SimpleNamespace(wait=lambda: code)

    monkeypatch.setattr(quickstart, 'start', start)
    argvs.exit_codes = codes
    return argvs


def test_a_whole_run_is_toxs_three_suites(started, monkeypatch):
    monkeypatch.setattr('sys.argv', ['quickstart.py', 'test'])

    assert quickstart.test() == 0
    assert started == WHOLE_RUN


@pytest.mark.parametrize('failing, started_until', [
    ('bin/flake8 opie', 1),
    ('bin/python -m pytest -x --shard 2/2 tests/unit', 3)])
def test_a_failing_stage_ends_the_run(started, monkeypatch, capsys,
                                      failing, started_until):
    monkeypatch.setattr('sys.argv', ['quickstart.py', 'test'])
    started.exit_codes[failing] = 1

    assert quickstart.test() == 1
    assert started == WHOLE_RUN[:started_until]
    assert 'the later ones did not run' in capsys.readouterr().out


def test_no_tests_selected_in_one_shard_is_no_failure(started,
                                                      monkeypatch):
    monkeypatch.setattr('sys.argv', [
        'quickstart.py', 'test', 'tests/unit/test_layout.py'])
    started.exit_codes[
        'bin/python -m pytest -x --shard 2/2 tests/unit/test_layout.py'] = \
        quickstart.NO_TESTS

    assert quickstart.test() == 0


def test_paths_asked_for_run_in_their_suites_process(started, monkeypatch):
    monkeypatch.setattr('sys.argv', [
        'quickstart.py', 'test', 'tests/functional/plugin', '-k', 'budget',
        'tests/unit/test_layout.py'])

    assert quickstart.test() == 0
    assert started == [
        'bin/python -m pytest -x --shard 1/2 tests/unit/test_layout.py -k '
        'budget',
        'bin/python -m pytest -x --shard 2/2 tests/unit/test_layout.py -k '
        'budget',
        'bin/python -m pytest -q --ignore tests/functional/bot --shard 1/2 '
        'tests/functional/plugin -k budget',
        'bin/python -m pytest -q --ignore tests/functional/bot --shard 2/2 '
        'tests/functional/plugin -k budget']


def test_the_bot_tests_alone_run_in_their_process_only(started,
                                                       monkeypatch):
    monkeypatch.setattr('sys.argv', [
        'quickstart.py', 'test', 'tests/functional/bot/test_tenant.py'])

    assert quickstart.test() == 0
    assert started == [
        'bin/python -m pytest -q tests/functional/bot/test_tenant.py']


@pytest.mark.parametrize('option', ['--ignore', '--deselect'])
def test_a_path_given_to_an_option_is_its_value_not_a_test_to_run(
        started, monkeypatch, option):
    monkeypatch.setattr('sys.argv', [
        'quickstart.py', 'test', option, 'tests/functional/test_race.py'])

    assert quickstart.test() == 0
    assert started == [
        argv + ' %s tests/functional/test_race.py' % option
        for argv in WHOLE_RUN[1:]]


@pytest.mark.parametrize('args', [['--shard', '1/2'], ['--shard=2/2']])
def test_a_shard_asked_for_is_refused_as_each_process_has_its_own(
        started, monkeypatch, capsys, args):
    monkeypatch.setattr('sys.argv', ['quickstart.py', 'test'] + args)

    assert quickstart.test() == 2
    assert started == []
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert '--shard' in err
