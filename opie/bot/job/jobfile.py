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

"""Load a job file (YAML or JSON) into a :class:`opie.bot.job.model.Job`.

Every error names the file, the line and the field, e.g.
``j60.yaml:14: tasks[3].memory_mb: -1 is less than the minimum of 0``, so a
tenant can fix the file without reading a traceback.  JSON is read with the
YAML parser (JSON is YAML) so that both get line numbers.

Hostile files end the same way, in bounded time and memory: numbers that
are not finite or do not fit a float, strings with a NUL, nesting deeper
than any job needs, aliases that expand past :data:`MAX_NODES` values,
more than :data:`generate.MAX_TASKS` tasks.
"""
import math
import re

import jsonschema
import yaml

from opie.bot import agent
from opie.bot.job import files
from opie.bot.job import generate
from opie.bot.job import model
from opie.bot.job import schema

_DEFAULT_LIMIT = 5
# Values a file may expand to (aliases included); far above any real job.
MAX_NODES = 2000000
MAX_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 12
# A task id names objects and files: no path separator, no control
# character, not . or .. (a directory's own names).
TASK_ID = re.compile(r'(?!\.\.?\Z)[^/\\\x00-\x1f\x7f]{1,200}')


class JobFileError(Exception):
    """One or more problems in a job file, ready to print."""

    def __init__(self, problems):
        super().__init__('\n'.join(problems))
        self.problems = problems


def field_name(path):
    out = ''
    for part in path:
        if isinstance(part, int):
            out += '[%d]' % part
        elif '.' in str(part) or not str(part):
            out += '[%r]' % part
        else:
            out += ('.' if out else '') + str(part)
    return out or '(top level)'


class _Loader(yaml.SafeLoader):
    """YAML 1.1 as PyYAML reads it, but numbers in JSON's (and YAML
    1.2's) exponent form, such as ``1e-3``, are numbers, not strings."""


_Loader.add_implicit_resolver(
    'tag:yaml.org,2002:float',
    re.compile(r'^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$'),
    list('-+0123456789.'))


class _Source:
    """Parsed data plus the line of every path in it."""

    def __init__(self, filename, text):
        self.filename = filename
        self.lines = {}
        self.nodes = 0
        try:
            loader = _Loader(text)
        except yaml.YAMLError as exc:
            raise self._yaml_error(exc, text) from None
        try:
            node = loader.get_single_node()
            if node is None:
                raise self.error((), 'the file is empty')
            self.data = self._build(loader, node, ())
        except yaml.YAMLError as exc:
            raise self._yaml_error(exc, text) from None
        except RecursionError:
            raise JobFileError(['%s: nested too deeply' % filename]) \
                from None
        finally:
            loader.dispose()

    def _yaml_error(self, exc, text):
        if isinstance(exc, yaml.MarkedYAMLError):
            mark = exc.problem_mark or exc.context_mark
            line, problem = (mark.line + 1 if mark else 1), exc.problem
        else:
            # A character YAML does not allow (yaml.reader.ReaderError).
            position = getattr(exc, 'position', 0)
            line = text.count('\n', 0, position) + 1
            problem = 'character %r is not allowed' % getattr(
                exc, 'character', '?')
        return JobFileError(['%s:%d: not valid YAML or JSON: %s'
                             % (self.filename, line, problem)])

    def _construct(self, loader, node, path):
        """The value of a scalar node; an explicit tag whose text does not
        fit it (``!!int abc``) or a number too long is the file's error."""
        try:
            return loader.construct_object(node)
        except (ValueError, KeyError, AttributeError, TypeError,
                yaml.YAMLError):
            raise self.error(path, 'not a valid value for tag %s'
                             % node.tag) from None

    def _build(self, loader, node, path):
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.error((), 'more than %d values (an alias that '
                             'expands too far?)' % MAX_NODES)
        if len(path) > MAX_DEPTH:
            raise self.error(path[:MAX_DEPTH], 'nested too deeply')
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            own = sum(1 for key_node, _ in node.value
                      if key_node.tag != 'tag:yaml.org,2002:merge')
            loader.flatten_mapping(node)
            # Merged pairs (``<<: *base``) come first; the mapping's own
            # keys override them, but may not repeat among themselves.
            merged = len(node.value) - own
            out, seen = {}, set()
            for i, (key_node, value_node) in enumerate(node.value):
                key = self._construct(loader, key_node, path)
                if not isinstance(key, (str, int, float, bool)):
                    raise self.error(path, 'a key must be a plain value')
                key = str(key)
                self.lines[path + (key,)] = key_node.start_mark.line + 1
                if i >= merged:
                    if key in seen:
                        raise self.error(path + (key,), 'duplicate key')
                    seen.add(key)
                out[key] = self._build(loader, value_node, path + (key,))
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self._build(loader, child, path + (i,))
                    for i, child in enumerate(node.value)]
        return self._scalar(path, self._construct(loader, node, path))

    def _scalar(self, path, value):
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and abs(value) > 2 ** 53:
            raise self.error(path, 'number too large')
        if isinstance(value, float) and not math.isfinite(value):
            raise self.error(path, '%s is not a finite number' % value)
        if isinstance(value, str) and '\x00' in value:
            raise self.error(path, 'contains a NUL character')
        return value

    def line(self, path):
        path = tuple(path)
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path, 1)

    def message(self, path, text):
        return '%s:%d: %s: %s' % (self.filename, self.line(path),
                                  field_name(path), text)

    def error(self, path, text):
        return JobFileError([self.message(path, text)])


def _schema_errors(src):
    validator = jsonschema.Draft202012Validator(schema.SCHEMA)
    problems = []
    for err in validator.iter_errors(src.data):
        if err.context:
            err = jsonschema.exceptions.best_match(err.context)
        problems.append((src.line(err.absolute_path),
                         src.message(err.absolute_path, err.message)))
    return [text for _, text in sorted(problems)]


def _flavors(data):
    flavors = {}
    for name, f in data['flavors'].items():
        limits = f.get('limits', {})
        flavors[name] = model.Flavor(
            name=name, vcpus=f['vcpus'], ram_mb=f['ram_gb'] * 1024.0,
            gflops=f['gflops'], price_h=dict(f['price_h']),
            limits={m: limits.get(m, _DEFAULT_LIMIT) for m in model.MARKETS})
    return flavors


def _runtimes(src, path, entry, flavors):
    if ('runtime_s' in entry) == ('runtime_ref_s' in entry):
        raise src.error(path, 'give exactly one of runtime_s and '
                              'runtime_ref_s')
    if 'runtime_s' in entry:
        value = entry['runtime_s']
        if not isinstance(value, dict):
            return {name: float(value) for name in flavors}
        unknown = sorted(set(value) - set(flavors))
        if unknown:
            raise src.error(path + ('runtime_s', unknown[0]),
                            'no such flavor')
        missing = sorted(set(flavors) - set(value))
        if missing:
            raise src.error(path + ('runtime_s',),
                            'no run time for flavor(s) %s'
                            % ', '.join(missing))
        return {name: float(v) for name, v in value.items()}
    ref = entry.get('ref_flavor')
    if ref not in flavors:
        raise src.error(path + ('ref_flavor',),
                        'runtime_ref_s needs ref_flavor naming one of: %s'
                        % ', '.join(sorted(flavors)))
    # One task uses one vCPU, so speed goes with Gflops per vCPU.
    base = entry['runtime_ref_s'] * flavors[ref].gflops_per_vcpu
    return {name: base / f.gflops_per_vcpu for name, f in flavors.items()}


def _task_entries(src):
    data = src.data
    for i, entry in enumerate(data.get('tasks', [])):
        yield ('tasks', i), entry
    for g, gen in enumerate(data.get('generate', [])):
        path = ('generate', g)
        if ('runtime_s' in gen) == ('runtime_ref_s' in gen):
            raise src.error(path, 'give exactly one of runtime_s and '
                                  'runtime_ref_s')
        try:
            entries = generate.expand(gen)
        except generate.GeneratorError as exc:
            raise src.error(path + (exc.field,), str(exc)) from None
        for entry in entries:
            yield path, entry


def _outputs(src):
    """Every output pattern stays below the task's directory: one
    problem per pattern that does not."""
    data = src.data
    lists = [(('job', 'outputs'), data['job'].get('outputs', ()))]
    for section in ('tasks', 'generate'):
        lists += [((section, i, 'outputs'), entry.get('outputs', ()))
                  for i, entry in enumerate(data.get(section, ()))]
    problems = []
    for path, patterns in lists:
        for i, pattern in enumerate(patterns):
            try:
                agent.relative_path(pattern)
            except ValueError:
                problems.append(src.message(
                    path + (i,), "%r leaves the task's directory"
                    % pattern))
    return problems


def _tasks(src, flavors):
    job_outputs = src.data['job'].get('outputs', ())
    tasks, seen = [], {}
    for path, entry in _task_entries(src):
        if not TASK_ID.fullmatch(entry['id']):
            raise src.error(path + ('id',), 'task id %r: 1 to 200 '
                            'characters, no / or \\ or control character, '
                            'not . or ..' % entry['id'])
        if entry['id'] in seen:
            raise src.error(path + ('id',), 'duplicate task id %r (first '
                            'at line %d)' % (entry['id'], seen[entry['id']]))
        seen[entry['id']] = src.line(path)
        task = model.Task(
            id=entry['id'], command=entry.get('command', ''),
            memory_mb=float(entry.get('memory_mb', 0.0)),
            runtime_s=_runtimes(src, path, entry, flavors),
            inputs=tuple(entry.get('inputs', ())),
            outputs=tuple(agent.relative_path(p) for p in
                          entry.get('outputs', job_outputs)))
        if not any(task.memory_mb <= f.ram_mb and f.limits[model.NORMAL] > 0
                   for f in flavors.values()):
            raise src.error(path + ('memory_mb',),
                            '%s MB fits no flavor a normal server may use'
                            % task.memory_mb)
        tasks.append(task)
        if len(tasks) > generate.MAX_TASKS:
            raise src.error(path, 'more than %d tasks'
                            % generate.MAX_TASKS)
    if not tasks:
        raise src.error((), 'the job has no tasks (give tasks or generate)')
    return tuple(tasks)


def _policy(src):
    raw = dict(src.data.get('policy', {}))
    policy = model.Policy(**raw)
    if policy.alpha_s >= src.data['job']['deadline_s']:
        raise src.error(('policy', 'alpha_s'),
                        'must be shorter than job.deadline_s')
    return policy


def parse(text, filename='<job>'):
    src = _Source(filename, text)
    problems = _schema_errors(src) or _outputs(src)
    if problems:
        raise JobFileError(problems)
    flavors = _flavors(src.data)
    return model.Job(name=src.data['job']['name'],
                     deadline_s=float(src.data['job']['deadline_s']),
                     policy=_policy(src), flavors=flavors,
                     tasks=_tasks(src, flavors))


def load(path):
    try:
        text = files.read_text(path, MAX_BYTES)
    except files.ReadError as exc:
        raise JobFileError(['%s: %s' % (path, exc)]) from None
    return parse(text, str(path))
