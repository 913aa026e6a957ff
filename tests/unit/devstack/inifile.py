"""DevStack's ini functions for the plugin test: iniset, iniget and their
multi-line forms, as ``python inifile.py COMMAND FILE SECTION OPTION ...``.

They keep the file's other lines, add a missing section at the end and a
missing option at the end of its section, as DevStack's ``inc/ini-config``
does.
"""
import os
import re
import sys

SECTION = re.compile(r'^\[(?P<name>[^\]]+)\]\s*$')


def _read(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().splitlines()


def _span(lines, section):
    """(start, end) of the body of ``section``, or None."""
    start = None
    for index, line in enumerate(lines):
        match = SECTION.match(line)
        if match and start is not None:
            return start, index
        if match and match.group('name') == section:
            start = index + 1
    return None if start is None else (start, len(lines))


def _option_lines(lines, span, option):
    pattern = re.compile(r'^%s\s*=' % re.escape(option))
    return [i for i in range(*span) if pattern.match(lines[i])]


def get(path, section, option):
    lines = _read(path)
    span = _span(lines, section)
    if span is None:
        return []
    return [lines[i].split('=', 1)[1].strip()
            for i in _option_lines(lines, span, option)]


def set_values(path, section, option, values):
    lines = _read(path)
    span = _span(lines, section)
    if span is None:
        lines.append('[%s]' % section)
        span = (len(lines), len(lines))
    found = _option_lines(lines, span, option)
    new = ['%s = %s' % (option, value) for value in values]
    at = found[0] if found else span[1]
    for i in reversed(found):
        del lines[i]
    lines[at:at] = new
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')


def main(command, path, section, option, *values):
    if command == 'get':
        print(' '.join(get(path, section, option)[:1]))
    elif command == 'get-multi':
        print(' '.join(get(path, section, option)))
    elif command == 'set':
        set_values(path, section, option, [' '.join(values)])
    elif command == 'set-multi':
        set_values(path, section, option, values)
    else:
        sys.exit('unknown command %r' % command)


if __name__ == '__main__':
    main(*sys.argv[1:])
