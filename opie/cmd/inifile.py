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

"""Editing an ini file such as nova.conf line by line.

``opie-manage nova-conf`` changes a few options of a file an operator or
DevStack also edits, so it must leave every other line as it is: comments,
blank lines, other sections and options, their order. Like DevStack's
``iniset``, it replaces an option where it stands and adds a missing
section at the end of the file; a missing option goes after the last
option of its section. Lines are read as oslo.config reads them, so the
editor sees what Nova sees: indented lines continue the value above, a
value is stripped of blanks and of one pair of surrounding quotes, section
names other than ``DEFAULT`` are case-insensitive and a section may appear
several times, a repeated option (a multi-valued one such as
``available_filters``) gives one value per line. Lines keep their ending
(a CRLF file stays CRLF), and a ``$`` in a value written is doubled, since
oslo.config would read it as a reference to another option.
"""
import dataclasses
import os
import stat

DEFAULT = 'DEFAULT'
QUOTES = ('"', "'")


class IniError(ValueError):
    """A line oslo.config would refuse, or a value no line can hold."""


@dataclasses.dataclass
class _Assignment:
    """``option = value`` in ``section``, on lines ``start`` to ``end``
    (excluded), continuation lines included."""
    section: str
    option: str
    start: int
    end: int
    parts: list

    @property
    def value(self):
        return '\n'.join(self.parts)


def _section_key(name):
    """The name oslo.config merges sections by."""
    return name if name == DEFAULT else name.lower()


def _is_quoted(value):
    # As oslo.config: a lone quote counts, and reads as ''.
    return value[:1] in QUOTES and value[0] == value[-1]


def _split(line):
    """(option, value) of an assignment line, as oslo.config's iniparser
    reads it: split at the first ``=`` or ``:``, the value stripped of
    blanks and of one pair of quotes around it."""
    at = min((i for i in (line.find('='), line.find(':')) if i >= 0),
             default=-1)
    if at < 0:
        raise IniError("no '=' or ':' in %r" % line)
    option, value = line[:at].strip(), line[at + 1:].strip()
    if not option:
        raise IniError('no option name in %r' % line)
    return option, value[1:-1] if _is_quoted(value) else value


def escape(value):
    """``value`` as written in a file oslo.config reads it back from."""
    return value.replace('$', '$$')


def _line(option, value):
    """The line that gives ``option`` the raw value ``value`` (``$``
    escaped already) when read back."""
    if '\n' in value or '\r' in value:
        raise IniError('the value of %s cannot span lines' % option)
    # Quote what reading back would strip: blanks around the value, or a
    # pair of quotes it starts and ends with.
    if value != value.strip() or _is_quoted(value):
        value = '"%s"' % value
    return '%s = %s' % (option, value)


class IniFile:
    """The lines of an ini file, edited in memory; ``text`` is the result."""

    def __init__(self, text=''):
        # Split as Python reads a file line by line, like oslo.config
        # (str.splitlines() would also split at form feeds and others).
        # A line keeps the '\r' of a CRLF ending: parsing ignores it, and
        # lines added get one too if the file's first line has one.
        self.lines = text.split('\n')
        self._cr = '\r' if self.lines[0].endswith('\r') else ''
        # Whether the last line ends with a newline (kept as found unless
        # lines are added after it).
        self._final_newline = self.lines[-1] == ''
        if self._final_newline:
            self.lines.pop()
        self._headers, self._assignments = self._parse()

    @property
    def text(self):
        end = '\n' if self.lines and self._final_newline else ''
        return '\n'.join(self.lines) + end

    def _parse(self):
        """Section headers, {line index: section key}, and assignments."""
        headers, assignments = {}, []
        section = current = None
        for index, line in enumerate(self.lines):
            try:
                line = line.rstrip()
                if not line:
                    # A blank line ends a value continued on several lines.
                    current = None
                elif line.startswith((' ', '\t')):
                    if current is None:
                        raise IniError('indented line %r continues no '
                                       'option' % line.lstrip())
                    current.parts.append(line.lstrip())
                    current.end = index + 1
                elif line.startswith('['):
                    if not line.endswith(']') or len(line) < 3:
                        raise IniError('bad section header %r' % line)
                    section = _section_key(line[1:-1])
                    headers[index] = section
                    current = None
                elif line.startswith(('#', ';')):
                    current = None
                elif section is None:
                    raise IniError('option %r before any section header'
                                   % line)
                else:
                    option, value = _split(line)
                    current = _Assignment(section, option, index, index + 1,
                                          [value])
                    assignments.append(current)
            except IniError as exc:
                raise IniError('line %d: %s' % (index + 1, exc)) from None
        return headers, assignments

    def _find(self, section, option):
        key = _section_key(section)
        return [a for a in self._assignments
                if a.section == key and a.option == option]

    def options(self, section):
        """(option, raw value) of every line of ``section``, in order."""
        key = _section_key(section)
        return [(a.option, a.value) for a in self._assignments
                if a.section == key]

    def get(self, section, option):
        """The values of ``option`` in ``section``, one per line, in file
        order (oslo.config uses the last one of a single-valued option).
        """
        return [a.value for a in self._find(section, option)]

    def set(self, section, option, values, raw=False):
        """Make ``values`` the values of ``option`` in ``section``, one line
        each; return whether anything changed.

        Values are escaped from interpolation unless ``raw`` (values
        already as written in the file, such as those :meth:`get` gives).

        The existing lines of the option are reused in order: a line that
        already has its value is left as it is, the others are rewritten
        in place, lines left over are removed and values left over are
        added after the last line of the option (else at the end of the
        section, which is added at the end of the file if missing).
        """
        if not raw:
            values = [escape(value) for value in values]
        new = [_line(option, value) + self._cr for value in values]
        found = self._find(section, option)
        edits = []
        for assignment, value, line in zip(found, values, new):
            if assignment.value != value:
                edits.append((assignment.start, assignment.end, [line]))
        edits += [(a.start, a.end, []) for a in found[len(new):]]
        if len(new) > len(found):
            at, head = self._insertion_point(section, found)
            edits.append((at, at, [h + self._cr for h in head]
                          + new[len(found):]))
        self._edit(edits)
        if len(found) > len(new):
            self._drop_empty_sections(section)
        return bool(edits)

    def _edit(self, edits):
        """Replace lines: each edit is (start, end excluded, new lines)."""
        # Bottom up, so that each edit leaves the line numbers of the
        # others valid.
        for start, end, lines in sorted(edits, key=lambda edit: -edit[0]):
            if end == len(self.lines) and lines and not self._final_newline:
                # Lines go after the last one, which now needs its end.
                if start == end and self.lines:
                    self.lines[-1] += self._cr
                self._final_newline = True
            self.lines[start:end] = lines
        if edits:
            self._headers, self._assignments = self._parse()

    def _section_spans(self, section):
        """(start, end excluded) of each header of ``section`` and its
        lines; at the end of the file, with the blank lines before it,
        which separated it from the section above."""
        key = _section_key(section)
        starts = sorted(self._headers) + [len(self.lines)]
        spans = []
        for start, end in zip(starts, starts[1:]):
            if self._headers[start] != key:
                continue
            if end == len(self.lines):
                while start > 0 and not self.lines[start - 1].strip():
                    start -= 1
            spans.append((start, end))
        return spans

    def remove_section(self, section):
        """Remove every header of ``section`` with its lines (comments
        too); return whether there was one."""
        spans = self._section_spans(section)
        self._edit([(start, end, []) for start, end in spans])
        return bool(spans)

    def _drop_empty_sections(self, section):
        """Remove the headers of ``section`` that only blank lines follow
        now that their options are gone, as if never added."""
        self._edit([(start, end, []) for start, end
                    in self._section_spans(section)
                    if not any(line.strip() and not line.startswith('[')
                               for line in self.lines[start:end])])

    def _insertion_point(self, section, found):
        """Where new lines of an option go, and the section header to add
        first if the section is missing."""
        if found:
            return found[-1].end, []
        key = _section_key(section)
        in_section = [a for a in self._assignments if a.section == key]
        if in_section:
            return in_section[-1].end, []
        for index, name in self._headers.items():
            if name == key:
                return index + 1, []
        # A blank line between the last section and the new one.
        head = [''] if self.lines and self.lines[-1].strip() else []
        return len(self.lines), head + ['[%s]' % section]


def read_text(path):
    """The text of the file at ``path``, line endings as they are.

    Raises OSError if it cannot be read, IniError if it is not a regular
    file (reading a FIFO would hang, a device is no configuration) or not
    UTF-8.
    """
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise IniError('not a regular file')
    try:
        # newline='': line endings as they are, to be written back so.
        with open(path, encoding='utf-8', newline='') as f:
            return f.read()
    except UnicodeDecodeError as exc:
        raise IniError('not UTF-8 text: %s at byte %d' % (
            exc.reason, exc.start)) from None


def read(path):
    """The ini file at ``path``, empty if there is none.

    Raises OSError if it cannot be read, IniError if it is not text or
    names the line that oslo.config would refuse.
    """
    try:
        text = read_text(path)
    except FileNotFoundError:
        text = ''
    return IniFile(text)
