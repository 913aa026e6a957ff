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

"""A failing functional test's report starts with its exception (see
conftest.py): as pytest prints a testtools failure, the traceback comes
after every captured log line."""
import unittest

from tests.functional import conftest

NATIVE = """'NoneType' object is not iterable

During handling of the above exception, another exception occurred:
NOTE: Incompatible Exception Representation, displaying natively:

testtools.testresult.real._StringException: pythonlogging:'': {{{
ERROR [nova] Traceback (most recent call last): a logged one
}}}

Traceback (most recent call last):
  File "test_x.py", line 6, in test_a
    self.assertEqual(1, 2)
testtools.matchers._impl.MismatchError: 1 != 2
"""


class TracebackFirst(unittest.TestCase):

    def test_exception_then_traceback_then_the_logs(self):
        lines = conftest.traceback_first(NATIVE).splitlines()
        self.assertEqual('testtools.matchers._impl.MismatchError: 1 != 2',
                         lines[0])
        self.assertEqual('Traceback (most recent call last):', lines[2])
        self.assertEqual('  File "test_x.py", line 6, in test_a', lines[3])
        details = lines.index("The test's details:")
        self.assertEqual(
            ["testtools.testresult.real._StringException: "
             "pythonlogging:'': {{{",
             'ERROR [nova] Traceback (most recent call last): a logged one',
             '}}}'], lines[details + 1:])

    def test_a_message_of_many_lines_is_named_by_its_first(self):
        text = NATIVE.replace(
            'testtools.matchers._impl.MismatchError: 1 != 2',
            "AssertionError: -9 != 0 : client output:\n"
            "    planned 4 servers\ndone")
        lines = conftest.traceback_first(text).splitlines()
        self.assertEqual('AssertionError: -9 != 0 : client output:',
                         lines[0])

    def test_braces_in_the_traceback_stay_in_it(self):
        text = NATIVE.replace(
            'testtools.matchers._impl.MismatchError: 1 != 2',
            "KeyError: {'a': {'b': {'c': 1}}}\n\nDuring handling of the "
            "above exception, another exception occurred:\n\n"
            "Traceback (most recent call last):\n"
            '  File "test_x.py", line 9, in test_a\n'
            "    raise ValueError('x')\nValueError: x")
        lines = conftest.traceback_first(text).splitlines()
        self.assertEqual('ValueError: x', lines[0])
        details = lines.index("The test's details:")
        self.assertIn("KeyError: {'a': {'b': {'c': 1}}}", lines[:details])
        self.assertEqual('}}}', lines[-1])

    def test_other_reports_are_left_alone(self):
        self.assertIsNone(conftest.traceback_first(
            'Traceback (most recent call last):\nValueError: x'))
        self.assertIsNone(conftest.traceback_first(
            conftest._NATIVE + '\nno traceback given'))
