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
"""
import nova.tests.functional  # noqa: F401 (must be first)
from nova import test as nova_test  # noqa: E402
import pytest  # noqa: E402

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
