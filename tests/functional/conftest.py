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
