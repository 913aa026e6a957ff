"""The layout keeps the split: the core and the plugin sit below the tools.

``opie/core`` is the Nova-free model (scheduling, the preemptible flavor
contract, the provider config, snapshots); ``opie/nova`` is the plugin a
production Nova venv installs. Neither may import the operator CLI
(``opie.cmd``), the tenant client (``opie.bot``), the lab or the test
harness (``opie.testing``), and the core may import neither Nova nor the
plugin. Imports are read from the source, so a lazy import inside a
function counts too.
"""
import ast
import pathlib

import pytest

import opie

PACKAGE = pathlib.Path(opie.__file__).parent
ABOVE = ('opie.cmd', 'opie.bot', 'opie.lab', 'opie.testing')
# Nor may the core import the plugin, which imports Nova.
FORBIDDEN = {'core': ABOVE + ('nova', 'opie.nova'), 'nova': ABOVE}


def _modules(layer):
    return sorted((PACKAGE / layer).rglob('*.py'))


def _imports(path):
    """(line, names) of every import statement in the file: the modules
    it may import, relative ones made absolute."""
    # The package a relative import starts from, for a module or a
    # package's __init__.py alike.
    package = ('opie',) + path.relative_to(PACKAGE).parts[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
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


def _violations(layer):
    found = set()
    for path in _modules(layer):
        for line, names in _imports(path):
            bad = [name for name in names if any(
                name == prefix or name.startswith(prefix + '.')
                for prefix in FORBIDDEN[layer])]
            if bad:
                found.add((str(path.relative_to(PACKAGE.parent)), line,
                           bad[0]))
    return ['%s:%d imports %s' % item for item in sorted(found)]


@pytest.mark.parametrize('layer', sorted(FORBIDDEN))
def test_layer_imports_nothing_above_it(layer):
    assert _modules(layer)
    assert _violations(layer) == []


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

    assert _violations('core') == [
        'opie/core/bad.py:1 imports nova.conf',
        'opie/core/bad.py:2 imports opie.cmd',
        'opie/core/bad.py:3 imports opie.bot',
        'opie/core/bad.py:4 imports opie.testing',
        'opie/core/bad.py:7 imports opie.lab']
