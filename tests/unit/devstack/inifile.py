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

"""The ini file and local.conf handling of the stub DevStack
(``fake_devstack.sh``), on OPIE's own ini editor (:mod:`opie.cmd.inifile`,
which has the semantics of DevStack's ``iniset``).

A model written from what DevStack does, not a copy of it:

``set FILE SECTION OPTION VALUE...``, ``delete FILE SECTION OPTION``
    ``iniset`` and ``inidelete`` (DevStack's ``inc/ini-config``).

``meta-files LOCAL_CONF GROUP``
    The file specifications of the ``[[GROUP|FILE]]`` blocks of local.conf,
    as written (``$NOVA_CONF``), in order (``inc/meta-config``
    ``get_meta_section_files``).

``meta-section LOCAL_CONF GROUP FILE``
    The lines of the blocks ``[[GROUP|FILE]]`` (``get_meta_section``); stack.sh
    sources ``[[local|localrc]]`` this way.

``merge LOCAL_CONF GROUP FILE PATH``
    Merge the ``[[GROUP|FILE]]`` blocks into the ini file at ``PATH``,
    created if missing (``merge_config_file``): each ``option = value``
    line replaces the option in the file; an option given on several lines
    of a block becomes a multi-valued one with those values. Comment lines
    and lines starting with a blank are skipped, the value is stripped.
    DevStack also expands shell variables in the values; the stub does not.
"""
import re
import sys

from opie.cmd import files
from opie.cmd import inifile

# ``[[group|file]]``; like DevStack's awk, only the first word of the line
# counts.
META_HEADER = re.compile(r'^\[\[([^|\]]+)\|([^\]]*)\]\]')


def get(path, section, option):
    """The values of ``option``, one per line (``iniget_multiline``)."""
    return inifile.read(path).get(section, option)


def _set(path, section, option, values):
    ini = inifile.read(path)
    if ini.set(section, option, values) or not _exists(path):
        files.write(path, ini.text)


def _exists(path):
    try:
        open(path).close()
    except FileNotFoundError:
        return False
    return True


def iniset(path, section, option, *value):
    _set(path, section, option, [' '.join(value)])


def inidelete(path, section, option):
    if _exists(path):
        _set(path, section, option, [])


def _blocks(local_conf):
    """(group, file, lines) of each ``[[group|file]]`` block."""
    try:
        with open(local_conf, encoding='utf-8') as f:
            text = f.read()
    except FileNotFoundError:
        return
    block = None
    for line in text.splitlines():
        header = META_HEADER.match(line.split(' ')[0] if line else line)
        if header:
            if block is not None:
                yield block
            block = (header.group(1), header.group(2), [])
        elif block is not None:
            block[2].append(line)
    if block is not None:
        yield block


def meta_files(local_conf, group):
    return [spec for name, spec, _ in _blocks(local_conf) if name == group]


def meta_section(local_conf, group, spec):
    return [line for name, file_spec, lines in _blocks(local_conf)
            if (name, file_spec) == (group, spec) for line in lines]


def merge(local_conf, group, spec, path):
    """Merge the ``[[group|spec]]`` blocks into ``path``."""
    values = {}   # {(section, option): [value, ...]}, in local.conf order
    section = ''
    for line in meta_section(local_conf, group, spec):
        if line.startswith('['):
            section = line.strip().strip('[]')
        elif line.lstrip().startswith('#') or not line[:1].strip():
            continue
        elif '=' in line:
            option, value = line.split('=', 1)
            values.setdefault((section, option.rstrip()), []).append(
                value.strip())
    ini = inifile.read(path)
    for (section, option), lines in values.items():
        ini.set(section, option, lines)
    files.write(path, ini.text)


COMMANDS = {'set': iniset, 'delete': inidelete, 'merge': merge,
            'meta-files': meta_files, 'meta-section': meta_section}

if __name__ == '__main__':
    result = COMMANDS[sys.argv[1]](*sys.argv[2:])
    for item in result or ():
        print(item)
