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
"""
import nova.tests.functional  # noqa: F401 (must be first)
from nova import test as nova_test  # noqa: E402

_clear_attrs = nova_test.TestCase._clear_attrs


def _keep_test_attrs(self):
    keep = {k: v for k, v in self.__dict__.items() if k.startswith('test')}
    _clear_attrs(self)
    self.__dict__.update(keep)


nova_test.TestCase._clear_attrs = _keep_test_attrs
