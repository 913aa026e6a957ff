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

"""Error messages that stay the one line they claim to be.

OPIE's commands report bad input as one line naming the file, field or
option, and those lines quote what the user wrote: a YAML key, a flavor
name, an option's value. Python's ``str.splitlines`` breaks lines at far
more than ``\\n`` (``\\r``, ``\\v``, ``\\f``, ``\\x1c``-``\\x1e``, ``\\x85``,
U+2028, U+2029), a terminal obeys escape sequences, and bidirectional
controls reorder what the reader sees. :func:`escape` writes every
control, format and line or paragraph separator character as its Python
escape, so a quoted name can neither split a message nor disguise it.
:class:`ArgumentParser` holds a command's bad options to the same line.
"""
import argparse
import unicodedata

# Unicode categories written as escapes: controls, format characters
# (bidi overrides, zero-width), line and paragraph separators, lone
# surrogates (which a UTF-8 stream cannot even encode).
_ESCAPED = frozenset({'Cc', 'Cf', 'Zl', 'Zp', 'Cs'})


def escape(text):
    """``text`` with every character that could break or disguise a line
    written as its escape (``\\x1e``, ``\\u2028``)."""
    return ''.join(ascii(ch)[1:-1]
                   if unicodedata.category(ch) in _ESCAPED else ch
                   for ch in text)


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose bad options are one line naming the option (not a
    usage block and then the error), exit status 2."""

    def error(self, message):
        self.exit(2, '%s: error: %s (see %s --help)\n'
                  % (self.prog, escape(message), self.prog))
