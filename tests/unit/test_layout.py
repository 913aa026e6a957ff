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

"""The layout keeps the split: the core and the plugin sit below the tools,
and the unit tests run without Nova.

``opie/core`` is the Nova-free model (scheduling, the preemptible flavor
contract, the provider config, snapshots); ``opie/nova`` is the plugin a
production Nova venv installs. Neither may import the operator CLI
(``opie.cmd``), the tenant client (``opie.bot``), the lab or the test
harness (``opie.testing``), and the core may import neither Nova nor the
plugin. The lab (``opie.lab``) sits below the test harness, which drives
it: it imports nothing of ``opie.testing``. Imports are read from the
source, so a lazy import inside a function counts too, and so does
``pytest.importorskip('nova...')``.

The tenant client ``opie/bot`` installs without Nova: it imports neither
Nova, the plugin, the operator CLI, the lab nor the test harness (but for
``opie-bot demo``, which starts the in-process demo cloud of
``opie.testing.democloud``), and of the core only the contract
(``opie.core.contract``: the names and formats a tenant reads of OPIE).
Inside it, the core decides and the backends act: the core (the planner,
the executor, the take-over, the journal...) imports no backend
(``opie.bot.sim``, ``opie.bot.openstack``) and no front end (which would
bring the backends along); the front ends (``cli``,
``controller``) wire a core to a backend, and no backend imports a front
end. ``map_choice`` is the one core module that runs the
simulated cloud, to learn what a map bills (its docstring says why); the
HADS map builder reaches no backend even through it.

``tox -e py3`` runs ``tests/unit`` in a venv without Nova, so no unit test
module may import Nova, neither itself nor through an OPIE module that
imports Nova as it is imported (``opie.nova.request.host_records``, say); tests
that need Nova are functional tests (``tests/functional/plugin`` for the fast
ones).

Inside the plugin, the request's room (``opie.nova.request``: what runs
inside a scheduling request) imports nothing of the timers' room
(``opie.nova.periodic``): the periodic tasks use the request's claim and
termination, never the other way round, so a request never waits on what
runs on timers.

In the tenant client, the map builder (``opie.bot.job_map``) reaches no
backend (``opie.bot.sim``, ``opie.bot.openstack``), not even through
another module: building a map needs the job alone, and choosing one
(``opie.bot.map_choice``) is what runs the simulated cloud.
"""
import ast
import pathlib

import pytest

import opie

PACKAGE = pathlib.Path(opie.__file__).parent
ROOT = PACKAGE.parent
UNIT_TESTS = ROOT / 'tests' / 'unit'
ABOVE = ('opie.cmd', 'opie.bot', 'opie.lab', 'opie.testing')
# Nor may the core import the plugin, which imports Nova.
# The lab sits below the test harness, which drives it.
FORBIDDEN = {'core': ABOVE + ('nova', 'opie.nova'), 'nova': ABOVE,
             'lab': ('opie.testing',)}
CLIENT_FORBIDDEN = ('nova', 'opie.nova', 'opie.cmd', 'opie.lab',
                    'opie.testing')
# (importer, imported): the only exceptions to CLIENT_FORBIDDEN.
CLIENT_ALLOWED = {('opie.bot.cli', 'opie.testing.democloud')}
# What the client may import of the core.
CLIENT_CORE = 'opie.core.contract'
CLIENT_BACKENDS = ('opie.bot.sim', 'opie.bot.openstack')
CLIENT_FRONT_ENDS = ('opie.bot.cli', 'opie.bot.controller')
CLIENT_RUNS_THE_SIMULATOR = ('opie.bot.map_choice',)
# Room -> what it may not import.
ROOMS = {'nova/request': ('opie.nova.periodic',)}


def _modules(layer):
    return sorted((PACKAGE / layer).rglob('*.py'))


def _module_name(path):
    parts = path.relative_to(ROOT).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def _nodes(tree, lazy):
    """The tree's nodes; with ``lazy`` False, not those inside a function
    (which run only when it is called)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if lazy or not isinstance(node, (ast.FunctionDef,
                                         ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def _imports(path, lazy=True):
    """(line, names) of every import statement in the file, and of every
    ``importorskip`` or ``import_module`` of a module named in the source:
    the modules it may import, relative ones made absolute. With ``lazy``
    False, only what importing the file imports."""
    # The package a relative import starts from, for a module or a
    # package's __init__.py alike.
    package = path.relative_to(ROOT).parts[:-1]
    for node in _nodes(ast.parse(path.read_text(), str(path)), lazy):
        if isinstance(node, ast.Call):
            func = node.func
            name = getattr(func, 'attr', getattr(func, 'id', None))
            if (name in ('importorskip', 'import_module') and node.args
                    and isinstance(node.args[0], ast.Constant)):
                yield node.lineno, [node.args[0].value]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, [alias.name]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level \
                else ()
            module = '.'.join(base + ((node.module,) if node.module
                                      else ()))
            # "from opie import cmd" imports opie.cmd.
            yield node.lineno, [module] + ['%s.%s' % (module, alias.name)
                                           for alias in node.names]


def _under(name, prefixes):
    return any(name == prefix or name.startswith(prefix + '.')
               for prefix in prefixes)


def _found(paths, forbidden):
    """'path:line imports name' for each import in ``paths`` of a module
    ``forbidden`` says yes to."""
    found = set()
    for path in paths:
        for line, names in _imports(path):
            bad = [name for name in names if forbidden(name)]
            if bad:
                found.add((str(path.relative_to(ROOT)), line, bad[0]))
    return ['%s:%d imports %s' % item for item in sorted(found)]


def _violations(layer):
    return _found(_modules(layer),
                  lambda name: _under(name, FORBIDDEN[layer]))


def _room_violations():
    return [found for room, forbidden in sorted(ROOMS.items())
            for found in _found(_modules(room),
                                lambda name: _under(name, forbidden))]


def _plant(tmp_path, monkeypatch, files):
    """A tree of ``files`` (path: text) checked in place of OPIE's."""
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    monkeypatch.setattr(__name__ + '.PACKAGE', tmp_path / 'opie')
    monkeypatch.setattr(__name__ + '.ROOT', tmp_path)


def _importing_nova():
    """The OPIE modules that import Nova as they are imported: themselves,
    through their package or through another such module."""
    imports = {_module_name(path): [name for _, names in _imports(path, False)
                                    for name in names]
               for path in PACKAGE.rglob('*.py')}
    found = set()
    while True:
        more = {module for module, names in imports.items()
                if module not in found and _under(module, found)
                or any(_under(name, found | {'nova'}) for name in names)}
        if not more - found:
            return found
        found |= more


def _unit_tests_importing_nova():
    nova = _importing_nova() | {'nova'}
    return _found(sorted(UNIT_TESTS.rglob('*.py')),
                  lambda name: _under(name, nova))


def _reached(module):
    """``module`` and the OPIE modules it may import, directly or through
    others."""
    found, todo = set(), [module]
    while todo:
        name = todo.pop()
        base = ROOT.joinpath(*name.split('.'))
        path = next((p for p in (base.with_suffix('.py'),
                                 base / '__init__.py') if p.exists()), None)
        if name in found or path is None:
            continue
        found.add(name)
        todo += [n for _, names in _imports(path) for n in names]
    return found


@pytest.mark.parametrize('layer', sorted(FORBIDDEN))
def test_layer_imports_nothing_above_it(layer):
    assert _modules(layer)
    assert _violations(layer) == []


def test_the_request_room_imports_nothing_of_the_timers_room():
    assert _modules('nova/request') and _modules('nova/periodic')
    assert _room_violations() == []


def test_the_room_check_sees_a_request_import_a_timer(tmp_path,
                                                      monkeypatch):
    """The check itself: a request module importing the periodic room, by
    name, through its package or relatively, lazily too; not the periodic
    room importing the request's."""
    _plant(tmp_path, monkeypatch, {
        'opie/nova/__init__.py': '',
        'opie/nova/request/__init__.py': '',
        'opie/nova/request/claim.py':
            'from opie.nova.periodic import leader\n',
        'opie/nova/request/plan.py': ('from opie.nova import periodic\n'
                                      'def later():\n'
                                      '    from ..periodic import lifetime\n'),
        'opie/nova/periodic/__init__.py': '',
        'opie/nova/periodic/leader.py':
            'from opie.nova.request import claim\n'})

    assert _room_violations() == [
        'opie/nova/request/claim.py:1 imports opie.nova.periodic',
        'opie/nova/request/plan.py:1 imports opie.nova.periodic',
        'opie/nova/request/plan.py:3 imports opie.nova.periodic']


def test_the_map_builder_runs_on_no_backend():
    backends = ('opie.bot.sim', 'opie.bot.openstack')
    assert 'opie.bot.sim.backend' in _reached('opie.bot.map_choice')
    assert not [name for name in _reached('opie.bot.job_map')
                if _under(name, backends)]


def _client_violations():
    """The client's imports that break its rules (see the docstring)."""
    found = []
    for path in _modules('bot'):
        module = _module_name(path)
        if _under(module, CLIENT_FRONT_ENDS):
            rule = CLIENT_FORBIDDEN
        elif _under(module, CLIENT_BACKENDS + CLIENT_RUNS_THE_SIMULATOR):
            rule = CLIENT_FORBIDDEN + CLIENT_FRONT_ENDS
        else:
            rule = CLIENT_FORBIDDEN + CLIENT_BACKENDS + CLIENT_FRONT_ENDS
        found += _found([path], lambda name: _under(name, rule) and not any(
            # "from opie.testing import democloud" names its package too.
            module == importer and (_under(name, (imported,))
                                    or _under(imported, (name,)))
            for importer, imported in CLIENT_ALLOWED)
            or _beyond_the_contract(name))
    return found


def _beyond_the_contract(name):
    # "from opie.core import contract" names the package too.
    return (_under(name, ('opie.core',)) and name != 'opie.core'
            and not _under(name, (CLIENT_CORE,)))


def test_the_client_keeps_its_layers():
    assert _client_violations() == []


def test_the_contract_brings_nothing_of_opie_along():
    # What the client may import of the core imports no more of it.
    contract = PACKAGE / 'core' / 'contract.py'
    assert [name for _, names in _imports(contract) for name in names
            if _under(name, ('opie', 'nova'))] == []


def test_the_client_check_sees_each_broken_rule(tmp_path, monkeypatch):
    """The check itself: Nova, the lab, the harness or the core beyond
    its contract in the client, a backend or a front end in its core, a
    front end in a backend or in the map choice; not the demo's import,
    nor the contract."""
    _plant(tmp_path, monkeypatch, {
            'opie/bot/__init__.py': '',
            'opie/bot/core.py': ('import nova.objects\n'
                                 'from opie.bot.sim import backend\n'
                                 'def later():\n'
                                 '    from opie.bot import openstack\n'
                                 'from opie.bot import cli\n'),
            'opie/bot/cli.py': ('from opie.bot.sim import backend\n'
                                'from opie.testing import democloud\n'
                                'from opie.testing import harness\n'
                                'from opie.core import contract\n'
                                'from opie.core import preemptible\n'),
            'opie/bot/map_choice.py': ('from opie.bot.sim import backend\n'
                                       'from opie.bot import controller\n'),
            'opie/bot/sim/__init__.py': '',
            'opie/bot/sim/backend.py': ('from opie.bot import core\n'
                                        'from opie.bot import cli\n'
                                        'from opie.lab import cli\n')})

    assert sorted(_client_violations()) == [
        'opie/bot/cli.py:3 imports opie.testing.harness',
        'opie/bot/cli.py:5 imports opie.core.preemptible',
        'opie/bot/core.py:1 imports nova.objects',
        'opie/bot/core.py:2 imports opie.bot.sim',
        'opie/bot/core.py:4 imports opie.bot.openstack',
        'opie/bot/core.py:5 imports opie.bot.cli',
        'opie/bot/map_choice.py:2 imports opie.bot.controller',
        'opie/bot/sim/backend.py:2 imports opie.bot.cli',
        'opie/bot/sim/backend.py:3 imports opie.lab']


def test_no_unit_test_imports_nova():
    assert 'opie.nova.request.host_records' in _importing_nova()
    assert _unit_tests_importing_nova() == []


def test_the_check_sees_every_kind_of_import(tmp_path, monkeypatch):
    """The check itself: absolute, from-package and relative imports, at
    module level or in a function."""
    core = tmp_path / 'opie' / 'core'
    core.mkdir(parents=True)
    (core / '__init__.py').write_text('')
    (core / 'bad.py').write_text(
        'import nova.conf\n'
        'from opie import cmd\n'
        'from opie.bot import cli\n'
        'from ..testing import harness\n'
        'from . import resources\n'
        'def later():\n'
        '    from opie.lab import cli\n')
    monkeypatch.setattr(__name__ + '.PACKAGE', tmp_path / 'opie')
    monkeypatch.setattr(__name__ + '.ROOT', tmp_path)

    assert _violations('core') == [
        'opie/core/bad.py:1 imports nova.conf',
        'opie/core/bad.py:2 imports opie.cmd',
        'opie/core/bad.py:3 imports opie.bot',
        'opie/core/bad.py:4 imports opie.testing',
        'opie/core/bad.py:7 imports opie.lab']


def test_the_check_sees_nova_imported_by_a_unit_test(tmp_path,
                                                     monkeypatch):
    """The check itself: Nova imported by a unit test, directly, skipped
    when absent, or through OPIE modules and packages that import it when
    imported; not through a module that imports it only in a function."""
    _plant(tmp_path, monkeypatch, {
            'opie/__init__.py': '',
            'opie/nova/__init__.py': '',
            'opie/nova/direct.py': 'from nova import objects\n',
            'opie/nova/through.py': 'from . import direct\n',
            'opie/nova/lazy.py': 'def f():\n    import nova.conf\n',
            'opie/plugged/__init__.py': 'import nova\n',
            'opie/plugged/free.py': '',
            'tests/unit/test_a.py': (
                'import pytest\n'
                'from opie.nova import lazy\n'
                'from opie.nova import through\n'
                'from opie.plugged import free\n'
                'def test_it():\n'
                '    pytest.importorskip("nova.scheduler")\n'
                '    import nova.conf\n')})
    monkeypatch.setattr(__name__ + '.UNIT_TESTS', tmp_path / 'tests' /
                        'unit')

    assert _importing_nova() == {'opie.nova.direct', 'opie.nova.through',
                                 'opie.plugged', 'opie.plugged.free'}
    assert _unit_tests_importing_nova() == [
        'tests/unit/test_a.py:3 imports opie.nova.through',
        'tests/unit/test_a.py:4 imports opie.plugged',
        'tests/unit/test_a.py:6 imports nova.scheduler',
        'tests/unit/test_a.py:7 imports nova.conf']
