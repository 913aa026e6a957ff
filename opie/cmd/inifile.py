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
``available_filters``) gives one value per line.
"""
import dataclasses

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


def _line(option, value):
    """The line that gives ``option`` the value ``value`` when read back."""
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
        self.lines = text.split('\n')
        if self.lines[-1] == '':
            self.lines.pop()
        self._headers, self._assignments = self._parse()

    @property
    def text(self):
        return ''.join(line + '\n' for line in self.lines)

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

    def get(self, section, option):
        """The values of ``option`` in ``section``, one per line, in file
        order (oslo.config uses the last one of a single-valued option).
        """
        return [a.value for a in self._find(section, option)]

    def set(self, section, option, values):
        """Make ``values`` the values of ``option`` in ``section``, one line
        each; return whether anything changed.

        The existing lines of the option are reused in order: a line that
        already has its value is left as it is, the others are rewritten
        in place, lines left over are removed and values left over are
        added after the last line of the option (else at the end of the
        section, which is added at the end of the file if missing).
        """
        new = [_line(option, value) for value in values]
        found = self._find(section, option)
        edits = []
        for assignment, value, line in zip(found, values, new):
            if assignment.value != value:
                edits.append((assignment.start, assignment.end, [line]))
        edits += [(a.start, a.end, []) for a in found[len(new):]]
        if len(new) > len(found):
            at, head = self._insertion_point(section, found)
            edits.append((at, at, head + new[len(found):]))
        # Bottom up, so that each edit leaves the line numbers of the
        # others valid.
        for start, end, lines in sorted(edits, key=lambda edit: -edit[0]):
            self.lines[start:end] = lines
        if edits:
            self._headers, self._assignments = self._parse()
        return bool(edits)

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


def read(path):
    """The ini file at ``path``, empty if there is none.

    Raises OSError if it cannot be read, IniError if it is not text or
    names the line that oslo.config would refuse.
    """
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except FileNotFoundError:
        text = ''
    except UnicodeDecodeError as exc:
        raise IniError('not UTF-8 text: %s at byte %d' % (
            exc.reason, exc.start)) from None
    return IniFile(text)
