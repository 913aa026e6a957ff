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
source, so a lazy import inside a function counts too, and so do
``pytest.importorskip('nova...')``, ``importlib.import_module`` and
``__import__`` of a name written in the source (not a name computed at
run time, ``exec`` or ``runpy``).

The tenant client ``opie/bot`` installs without Nova: it imports neither
Nova, the plugin, the operator CLI, the lab nor the test harness (but for
``opie-bot demo``, whose module ``opie.bot.cli.demo`` starts the
in-process demo cloud of ``opie.testing.democloud``), and of the core
only the contract (``opie.core.contract``: the names and formats a
tenant reads of OPIE).  Inside it, each folder is a layer that imports
only its own and those below it (``CLIENT_LAYERS``): the agent, the job,
HADS (``hads``: the maps and the executor, which decides and acts through
its ports), the job's state, the simulated cloud (which runs the
executor, and which the map choice runs to learn what a map bills), the
report, the OpenStack backend, and the front ends (``cli``,
``controller``), which wire HADS to a backend.  The agent ships alone to
every server as the one file of its package, so it imports the standard
library alone, and no module of the client imports itself back through
others.

``tox -e py3`` runs ``tests/unit`` in a venv without Nova, so no unit test
module may import Nova, neither itself nor through an OPIE module that
imports Nova as it is imported (``opie.nova.request.host_records``, say);
tests that need Nova are functional tests (``tests/functional/plugin`` for
the fast ones).

Inside the plugin, the request's room (``opie.nova.request``: what runs
inside a scheduling request) imports nothing of the timers' room
(``opie.nova.periodic``): the periodic tasks use the request's claim and
termination, never the other way round, so a request never waits on what
runs on timers.
"""
import ast
import importlib.util
import pathlib
import sys

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
CLIENT_ALLOWED = {('opie.bot.cli.demo', 'opie.testing.democloud')}
# What the client may import of the core.
CLIENT_CORE = 'opie.core.contract'
CLIENT_BACKENDS = ('opie.bot.sim', 'opie.bot.openstack')
CLIENT_FRONT_ENDS = ('opie.bot.cli', 'opie.bot.controller')
# Room -> what it may not import.
ROOMS = {'nova/request': ('opie.nova.periodic',)}
# The client's layers, lowest first: each imports only its own and those
# below it.  The simulator sits below the report, whose job status reads
# the map choice that runs it.
CLIENT_LAYERS = (('opie.bot.agent',), ('opie.bot.job',), ('opie.bot.hads',),
                 ('opie.bot.state',), ('opie.bot.sim',),
                 ('opie.bot.report',), ('opie.bot.openstack',),
                 CLIENT_FRONT_ENDS)
# Shipped alone to every server, as one file.


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
            named = _called_module(node)
            if named:
                yield node.lineno, [named]
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


def _called_module(call):
    """The module an ``importorskip``, ``import_module`` or ``__import__``
    call names in the source (first or keyword argument), a relative one
    made absolute against ``import_module``'s package; else None."""
    func = getattr(call.func, 'attr', getattr(call.func, 'id', None))
    if func not in ('importorskip', 'import_module', '__import__'):
        return None
    given = dict(enumerate(call.args))
    given.update((k.arg, k.value) for k in call.keywords)
    name = given.get(0, given.get('name', given.get('modname')))
    package = given.get(1, given.get('package')) \
        if func == 'import_module' else None
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return None
    if name.value.startswith('.') and isinstance(package, ast.Constant):
        return importlib.util.resolve_name(name.value, package.value)
    return name.value


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


def _violations(layer, rules=FORBIDDEN):
    return _found(_modules(layer),
                  lambda name: _under(name, rules[layer]))


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


def test_the_map_builder_runs_on_no_backend():
    assert 'opie.bot.sim.backend' in _reached('opie.bot.sim.map_choice')
    assert not [name for name in _reached('opie.bot.hads.job_map')
                if _under(name, CLIENT_BACKENDS)]


def _rank(name):
    """The index of ``name``'s layer in CLIENT_LAYERS; -1 for the
    package opie.bot itself, None for anything else."""
    if name == 'opie.bot':
        return -1
    return next((i for i, layer in enumerate(CLIENT_LAYERS)
                 if _under(name, layer)), None)


def _layer_violations():
    """The client's modules in no layer, and its imports of a layer
    above the importer's."""
    found = []
    for path in _modules('bot'):
        rank = _rank(_module_name(path))
        if rank is None:
            found.append('%s is in no layer' % path.relative_to(ROOT))
            continue
        found += _found([path], lambda name: _rank(name) is not None
                        and _rank(name) > rank)
    return found


def _agent_violations():
    """The agent's imports of anything but the standard library: it
    ships alone, as the one file of its package (``agent.__file__``)."""
    return _found(_modules('bot/agent'), lambda name: name.split('.')[0]
                  not in sys.stdlib_module_names)


def _client_graph():
    """{module: the client's modules it imports}: of a package and
    its module in one statement (``from opie.bot import agent``), the
    module alone."""
    paths = {_module_name(path): path for path in _modules('bot')}
    graph = {}
    for module, path in paths.items():
        graph[module] = set()
        for _, names in _imports(path):
            known = [name for name in names if name in paths]
            graph[module].update(
                name for name in known if not any(
                    other != name and _under(other, (name,))
                    for other in known))
    return graph


def _circles():
    """Each set of the client's modules that import each other,
    directly or through others, as one sorted line."""
    graph = _client_graph()

    def reached(module):
        found, todo = set(), list(graph[module])
        while todo:
            name = todo.pop()
            if name not in found:
                found.add(name)
                todo += graph[name]
        return found

    reach = {module: reached(module) for module in graph}
    return sorted({' <-> '.join(sorted(
        [module] + [other for other in reach[module]
                    if module in reach[other] and other != module]))
        for module in graph if module in reach[module]})


def _client_violations():
    """The client's imports that break its rules (see the docstring)."""
    found = []
    for path in _modules('bot'):
        module = _module_name(path)
        found += _found([path], lambda name: _under(
            name, CLIENT_FORBIDDEN) and not any(
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
    assert _layer_violations() == []


def test_the_agent_ships_alone():
    assert _modules('bot/agent')
    assert _agent_violations() == []


def test_no_import_circles_in_the_client():
    assert _circles() == []


def test_the_contract_brings_nothing_of_opie_along():
    # What the client may import of the core imports no more of it.
    contract = PACKAGE / 'core' / 'contract.py'
    assert [name for _, names in _imports(contract) for name in names
            if _under(name, ('opie', 'nova'))] == []


def test_the_request_room_imports_nothing_of_the_timers_room():
    assert _modules('nova/request') and _modules('nova/periodic')
    assert _violations('nova/request', ROOMS) == []


def test_the_room_check_sees_a_request_import_a_timer(tmp_path,
                                                      monkeypatch):
    """The check itself: a request module importing the periodic room, by
    name, through its package or relatively, lazily too; not the periodic
    room importing the request's."""
    _tree(tmp_path, monkeypatch, {
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

    assert _violations('nova/request', ROOMS) == [
        'opie/nova/request/claim.py:1 imports opie.nova.periodic',
        'opie/nova/request/plan.py:1 imports opie.nova.periodic',
        'opie/nova/request/plan.py:3 imports opie.nova.periodic']


def _tree(tmp_path, monkeypatch, files):
    """Lay out ``files`` ({path: text}) in ``tmp_path`` and point the
    checks at it."""
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    monkeypatch.setattr(__name__ + '.PACKAGE', tmp_path / 'opie')
    monkeypatch.setattr(__name__ + '.ROOT', tmp_path)


def test_the_client_check_sees_each_broken_rule(tmp_path, monkeypatch):
    """The check itself: Nova, the lab, the harness or the core beyond
    its contract in the client; not the demo's import, nor the
    contract."""
    _tree(tmp_path, monkeypatch, {
        'opie/bot/__init__.py': '',
        'opie/bot/hads/executor.py': ('import nova.objects\n'
                                      'from opie.bot.sim import backend\n'),
        'opie/bot/cli/__init__.py': '',
        'opie/bot/cli/demo.py': ('from opie.testing import democloud\n'
                                 'from opie.testing import harness\n'
                                 'from opie.core import contract\n'
                                 'from opie.core import preemptible\n'),
        'opie/bot/cli/run.py': 'from opie.testing import democloud\n',
        'opie/bot/sim/backend.py': 'from opie.lab import cli\n'})

    assert sorted(_client_violations()) == [
        'opie/bot/cli/demo.py:2 imports opie.testing.harness',
        'opie/bot/cli/demo.py:4 imports opie.core.preemptible',
        'opie/bot/cli/run.py:1 imports opie.testing',
        'opie/bot/hads/executor.py:1 imports nova.objects',
        'opie/bot/sim/backend.py:1 imports opie.lab']


def test_the_layer_check_sees_each_upward_import(tmp_path, monkeypatch):
    """The check itself: a layer importing one above it, at module level
    or in a function, and a module in no layer; not a layer importing
    its own or one below."""
    _tree(tmp_path, monkeypatch, {
        'opie/bot/__init__.py': '',
        'opie/bot/job/__init__.py': '',
        'opie/bot/job/model.py': 'from opie.bot.hads import executor\n',
        'opie/bot/hads/__init__.py': '',
        'opie/bot/hads/executor.py': ('from opie.bot.job import model\n'
                                      'def later():\n'
                                      '    from opie.bot.cli import run\n'),
        'opie/bot/sim/__init__.py': '',
        'opie/bot/sim/backend.py': ('from opie.bot.report import report\n'
                                    'from opie.bot.state import journal\n'),
        'opie/bot/cli/__init__.py': ('from opie.bot.cli import run\n'
                                     'from opie.bot.openstack import live\n'),
        'opie/bot/stray.py': ''})

    assert sorted(_layer_violations()) == [
        'opie/bot/hads/executor.py:3 imports opie.bot.cli',
        'opie/bot/job/model.py:1 imports opie.bot.hads',
        'opie/bot/sim/backend.py:1 imports opie.bot.report',
        'opie/bot/stray.py is in no layer']


def test_the_agent_check_sees_each_import_of_opie(tmp_path, monkeypatch):
    """The check itself: the agent importing the client, OPIE or the
    core, even in a function, a module of its own package (which does not
    ship with it) or a third-party one; not the standard library."""
    _tree(tmp_path, monkeypatch, {
        'opie/bot/agent/__init__.py': ('import json\n'
                                       'from opie.bot.agent import helper\n'
                                       'from opie.bot.job import model\n'
                                       'from opie import oneline\n'
                                       'def later():\n'
                                       '    import opie.core.contract\n'
                                       'import yaml\n'
                                       'from urllib import parse\n'),
        'opie/bot/agent/helper.py': ''})

    assert _agent_violations() == [
        'opie/bot/agent/__init__.py:2 imports opie.bot.agent',
        'opie/bot/agent/__init__.py:3 imports opie.bot.job',
        'opie/bot/agent/__init__.py:4 imports opie',
        'opie/bot/agent/__init__.py:6 imports opie.core.contract',
        'opie/bot/agent/__init__.py:7 imports yaml']


def test_the_circle_check_sees_a_circle(tmp_path, monkeypatch):
    """The check itself: modules importing each other through a third,
    even in a function; not a module importing a circle's member, nor a
    package and the modules it names."""
    _tree(tmp_path, monkeypatch, {
        'opie/bot/__init__.py': '',
        'opie/bot/a.py': 'from opie.bot import b\n',
        'opie/bot/b.py': 'def later():\n    from opie.bot import c\n',
        'opie/bot/c.py': 'from opie.bot import a\n',
        'opie/bot/d.py': 'from opie.bot import a\n',
        'opie/bot/pkg/__init__.py': 'from opie.bot.pkg import mod\n',
        'opie/bot/pkg/mod.py': 'from opie.bot.pkg import other\n',
        'opie/bot/pkg/other.py': ''})

    assert _circles() == ['opie.bot.a <-> opie.bot.b <-> opie.bot.c']


def test_no_unit_test_imports_nova():
    assert 'opie.nova.request.host_records' in _importing_nova()
    assert _unit_tests_importing_nova() == []


def test_the_check_sees_every_kind_of_import(tmp_path, monkeypatch):
    """The check itself: absolute, from-package and relative imports, at
    module level or in a function, and the modules ``import_module`` and
    ``__import__`` name, by position or keyword, relative or not."""
    _tree(tmp_path, monkeypatch, {
        'opie/core/__init__.py': '',
        'opie/core/bad.py': ('import nova.conf\n'
                             'from opie import cmd\n'
                             'from opie.bot import cli\n'
                             'from ..testing import harness\n'
                             'from . import resources\n'
                             'def later():\n'
                             '    from opie.lab import cli\n'
                             '    __import__("opie.cmd.audit")\n'
                             '    importlib.import_module(name="nova.db")\n'
                             '    import_module(".cli", "opie.bot")\n'
                             '    import_module(".contract", "opie.core")\n'
                             '    import_module(name)\n')})

    assert _violations('core') == [
        'opie/core/bad.py:1 imports nova.conf',
        'opie/core/bad.py:2 imports opie.cmd',
        'opie/core/bad.py:3 imports opie.bot',
        'opie/core/bad.py:4 imports opie.testing',
        'opie/core/bad.py:7 imports opie.lab',
        'opie/core/bad.py:8 imports opie.cmd.audit',
        'opie/core/bad.py:9 imports nova.db',
        'opie/core/bad.py:10 imports opie.bot.cli']


def test_the_check_sees_nova_imported_by_a_unit_test(tmp_path,
                                                     monkeypatch):
    """The check itself: Nova imported by a unit test, directly, skipped
    when absent, or through OPIE modules and packages that import it when
    imported; not through a module that imports it only in a function."""
    _tree(tmp_path, monkeypatch, {
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
