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

"""pytest set-up for the functional tests (a real in-process Nova).

* Nova decides how to monkey patch in ``nova.tests.functional``; it must
  be imported before anything pulls in eventlet or futurist.
* nova's ``TestCase._clear_attrs`` deletes every public attribute of a
  test in cleanup, including the bound test method pytest later deletes
  itself (AttributeError); keep ``test*`` attributes.
* Tests share nothing across processes (in-memory databases,
  wsgi-intercept instead of ports, a temporary directory each), so
  ``--shard`` (``tests/conftest.py``) may split them.
* A failing test's report starts with its exception and traceback.
  pytest cannot read the exceptions testtools reports (no traceback
  object) and prints them as text: every captured log first, the
  traceback last, where a CI excerpt of the output's head and tail cuts
  it off.
* Each in-process cloud test's time is split into the harness's set-up,
  the test's own set-up after it (the fill: servers booted before the
  test method), the test method and the clean-up
  (``opie.testing.harness.PhaseClock``). The run's summary prints the
  totals and the files that cost most; ``--phases FILE`` (an option of
  every suite, ``tests/conftest.py``, since the quick start gives every
  process the same options) writes every test's split, tab-separated.
* What lives once the tests are collected (Nova, Placement, the test
  modules) is frozen out of the collector's reach, as oslo.service's
  launcher freezes a scheduler's parent before it forks workers: each
  scheduler's warm-up then collects (``opie.nova.manager.settle_garbage``)
  what the tests made, not the whole interpreter again (0.3-0.5 s of a
  test's set-up). Tests of the warm-up's own freezing say what was frozen
  before it.
"""
import nova.tests.functional  # noqa: F401 (must be first)
import collections  # noqa: E402
import gc  # noqa: E402
import time  # noqa: E402

from nova import test as nova_test  # noqa: E402
import pytest  # noqa: E402

from opie.testing import harness  # noqa: E402

_clear_attrs = nova_test.TestCase._clear_attrs


def _keep_test_attrs(self):
    keep = {k: v for k, v in self.__dict__.items() if k.startswith('test')}
    _clear_attrs(self)
    self.__dict__.update(keep)


nova_test.TestCase._clear_attrs = _keep_test_attrs


# pytest's text for an exception it cannot represent (_pytest/unittest.py).
_NATIVE = 'NOTE: Incompatible Exception Representation, displaying natively:'
_TRACEBACK = 'Traceback (most recent call last):'
# testtools' text of its details ("name: {{{content}}}", each) and of the
# traceback after them.
_DETAILS_END = '}}}\n\n' + _TRACEBACK


def _exception_line(traceback):
    """The first line of ``traceback``'s exception: after its last frame
    (a ``  File`` line and the indented lines of its code)."""
    lines = traceback.splitlines()
    frames = [i for i, line in enumerate(lines) if line.startswith('  File ')]
    at = frames[-1] + 1 if frames else 1
    while at < len(lines) - 1 and lines[at].startswith('    '):
        at += 1
    return lines[at]


def traceback_first(text):
    """testtools' failure ``text`` (its details, then the traceback) as
    the exception's first line, the traceback, then the details; None when
    ``text`` is not such a failure."""
    if _NATIVE not in text:
        return None
    # The last such end: a log line or an exception message may hold
    # "}}}", never followed by a blank line and a traceback's start.
    head, end, tail = text.rpartition(_DETAILS_END)
    if not end:
        return None
    traceback = (_TRACEBACK + tail).strip()
    details = head[head.find(_NATIVE) + len(_NATIVE):].lstrip() + '}}}'
    return '\n'.join([_exception_line(traceback), '', traceback, '',
                      "The test's details:", details])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if report.failed:
        reordered = traceback_first(str(report.longrepr))
        if reordered is not None:
            report.longrepr = reordered


def pytest_collection_finish(session):
    gc.collect()
    gc.freeze()


_SPLITS = pytest.StashKey()
# Files named in the summary, most costly first.
COSTLIEST_FILES = 12


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield
    finished = time.perf_counter()
    clock = getattr(getattr(item, 'instance', None), '_phase_clock', None)
    if clock is not None:
        item.config.stash.setdefault(_SPLITS, []).append(
            (item.nodeid, clock.boots, clock.split(finished)))


def phase_lines(splits, files=COSTLIEST_FILES):
    """The summary of ``splits`` ((test id, servers booted before the
    body, seconds by phase) each): totals, then the costliest files."""
    phases = harness.PhaseClock.PHASES
    by_file = collections.defaultdict(lambda: [0, 0] + [0.0] * len(phases))
    for test_id, boots, split in splits:
        row = by_file[test_id.split('::')[0]]
        row[0] += 1
        row[1] += boots
        for i, phase in enumerate(phases, 2):
            row[i] += split[phase]
    total = [sum(row[i] for row in by_file.values())
             for i in range(2 + len(phases))]
    header = '%-48s %5s %5s' % ('', 'tests', 'boots') + ''.join(
        ' %8s' % phase for phase in phases) + ' %8s' % 'all'

    def line(name, row):
        return '%-48s %5d %5d' % (name[-48:], row[0], row[1]) + ''.join(
            ' %8.1f' % seconds for seconds in row[2:]) + ' %8.1f' % sum(
                row[2:])
    costliest = sorted(by_file.items(), key=lambda item: -sum(item[1][2:]))
    return [header, line('in-process clouds: seconds', total)] + [
        line(name, row) for name, row in costliest[:files]]


def pytest_terminal_summary(terminalreporter, config):
    splits = config.stash.get(_SPLITS, [])
    if not splits:
        return
    terminalreporter.section('time by phase (harness, fill, body, cleanup)')
    for text in phase_lines(splits):
        terminalreporter.write_line(text)
    path = config.getoption('phases')
    if path:
        # One file a shard: they end in any order.
        k, n = (config.getoption('shard') or '1/1').split('/')
        path = path if n == '1' else '%s.%s' % (path, k)
        phases = harness.PhaseClock.PHASES
        with open(path, 'w') as f:
            f.write('\t'.join(('test', 'boots') + phases) + '\n')
            for test_id, boots, split in splits:
                f.write('\t'.join([test_id, str(boots)] + [
                    '%.3f' % split[phase] for phase in phases]) + '\n')
