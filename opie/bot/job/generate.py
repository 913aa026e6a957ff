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

"""Task generators: parameter sweeps and seeded value sets.

A generator expands to ``count`` tasks for every combination of its
``sweep`` lists.  ``id`` and ``command`` are Python format strings over
``i`` (0-based index), the sweep variables and ``runtime_s``.  A value
given as ``{min, avg, max}`` is drawn once per generator with its seed so
that the drawn set has exactly that minimum, mean and maximum, which is how
the paper's Table 5 describes its jobs: a seeded Beta sample is stretched
onto [min, max] and its interior bent by a power until the mean matches
(a triangular law cannot, its mode would fall outside the range for
ED200).
"""
import itertools
import math
import random
import re
import string


# Tasks a job may have: ten times the largest the benchmarks time.
MAX_TASKS = 100000
MAX_WIDTH = 100


class GeneratorError(ValueError):
    """A generator that cannot produce its tasks; names the field."""

    def __init__(self, field, message):
        super().__init__(message)
        self.field = field


def feasible_mean(n, lo, avg, hi):
    """Whether ``n`` values with this minimum and maximum can average avg."""
    if n == 1 or lo == hi:
        return lo <= avg <= hi and (n == 1 or lo == avg)
    if n == 2:
        return abs(avg - (lo + hi) / 2.0) < 1e-9
    return (lo * (n - 1) + hi) / n < avg < (lo + hi * (n - 1)) / n


def fit(rng, n, lo, avg, hi):
    """``n`` values with exactly this minimum, mean and maximum."""
    if n == 1 or lo == hi:
        return [float(avg)] * n
    m = (avg - lo) / (hi - lo)
    u = [rng.betavariate(2.0, 2.0 * (1.0 - m) / m) for _ in range(n)]
    i_lo = min(range(n), key=u.__getitem__)
    i_hi = max(range(n), key=u.__getitem__)
    span = (u[i_hi] - u[i_lo]) or 1.0
    v = [(x - u[i_lo]) / span for x in u]
    v[i_lo], v[i_hi] = 0.0, 1.0
    interior = [k for k in range(n) if k not in (i_lo, i_hi)]
    if interior:
        target = (m * n - 1.0) / len(interior)
        lo_p, hi_p = 1e-3, 1e3
        for _ in range(100):
            p = (lo_p * hi_p) ** 0.5
            mean = sum(v[k] ** p for k in interior) / len(interior)
            if mean > target:
                lo_p = p
            else:
                hi_p = p
        for k in interior:
            v[k] = v[k] ** p
    return [lo + (hi - lo) * x for x in v]


def _values(rng, spec, n, field):
    if not isinstance(spec, dict):
        return [spec] * n
    lo, avg, hi = spec['min'], spec['avg'], spec['max']
    if not lo <= hi:
        raise GeneratorError(field, 'min %s is above max %s' % (lo, hi))
    if not feasible_mean(n, lo, avg, hi):
        raise GeneratorError(
            field, '%d values between %s and %s cannot average %s'
            % (n, lo, hi, avg))
    return fit(rng, n, lo, avg, hi)


def _format(template, field, variables):
    """``template`` over ``variables``: plain names only (no attribute or
    index), widths of at most :data:`MAX_WIDTH`."""
    try:
        for _, name, spec, _ in string.Formatter().parse(template):
            if name is not None and not name.isidentifier():
                raise ValueError('{%s}: only plain names' % name)
            if spec and max(map(int, re.findall(r'\d+', spec)) or [0]) \
                    > MAX_WIDTH:
                raise ValueError('{%s:%s}: wider than %d'
                                 % (name, spec, MAX_WIDTH))
        return template.format(**variables)
    except (KeyError, IndexError, ValueError, TypeError) as exc:
        raise GeneratorError(field, 'cannot format %r: %s'
                             % (template, exc)) from None


def expand(gen):
    """Task entries (dicts shaped like ``tasks`` items) of one generator."""
    sweep = gen.get('sweep', {})
    names = list(sweep)
    n = math.prod(len(sweep[k]) for k in names) * gen.get('count', 1)
    if n > MAX_TASKS:
        raise GeneratorError('count', '%d tasks, more than the %d a job '
                             'may have' % (n, MAX_TASKS))
    combos = list(itertools.product(*(sweep[k] for k in names)))
    rng = random.Random(gen.get('seed', 0))
    runtime_key = 'runtime_s' if 'runtime_s' in gen else 'runtime_ref_s'
    runtimes = _values(rng, gen.get(runtime_key, 0.0), n, runtime_key)
    memory = _values(rng, gen.get('memory_mb', 0.0), n, 'memory_mb')
    entries = []
    for i in range(n):
        variables = dict(zip(names, combos[i % len(combos)]))
        variables.update(i=i, runtime_s=round(runtimes[i]))
        entry = {'id': _format(gen['id'], 'id', variables),
                 'command': _format(gen.get('command', ''), 'command',
                                    variables),
                 'memory_mb': memory[i],
                 runtime_key: runtimes[i],
                 'inputs': list(gen.get('inputs', ()))}
        for key in ('ref_flavor', 'outputs'):
            if key in gen:
                entry[key] = gen[key]
        entries.append(entry)
    return entries
