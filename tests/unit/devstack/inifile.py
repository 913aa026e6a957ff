"""DevStack's ``iniset`` and ``iniget`` for the plugin test, on OPIE's own
ini editor (:mod:`opie.cmd.inifile`, which has its semantics).

``python inifile.py FILE SECTION OPTION VALUE...`` is ``iniset``; stack.sh
uses it to merge local.conf's ``[[post-config]]`` sections.
"""
import sys

from opie.cmd import files
from opie.cmd import inifile


def get(path, section, option):
    """The values of ``option``, one per line (``iniget_multiline``)."""
    return inifile.read(path).get(section, option)


def iniset(path, section, option, *value):
    ini = inifile.read(path)
    ini.set(section, option, [' '.join(value)])
    files.write(path, ini.text)


if __name__ == '__main__':
    iniset(*sys.argv[1:])
