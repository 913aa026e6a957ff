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

"""The ini editor of ``opie-manage nova-conf``: reads as oslo.config, keeps
every line it does not change."""
import textwrap

from oslo_config import cfg
import pytest

from opie.cmd import inifile

TRICKY = textwrap.dedent("""\
    # A comment: option = not one
    [DEFAULT]
    debug=True
    [filter_scheduler]
    available_filters = a.all
    ; another comment
    available_filters: "b.One"
    weight_classes = x.W,
        y.W
      # indented, so part of the value above

    enabled_filters = 'F1,F2'
    [Filter_Scheduler]
    host_subset_size = 1
    [opie]
    password = " spaced "
    """)


def _oslo_values(tmp_path, text, section, option):
    """What oslo.config reads for the option: one value per line."""
    path = tmp_path / 'oslo.conf'
    path.write_text(text)
    group = None if section == inifile.DEFAULT else section
    conf = cfg.ConfigOpts()
    conf.register_opt(cfg.MultiStrOpt(option, default=[]), group=group)
    conf(['--config-file', str(path)], default_config_files=[],
         default_config_dirs=[], use_env=False)
    return (conf if group is None else conf[group])[option]


@pytest.mark.parametrize('section, option', [
    ('DEFAULT', 'debug'),
    ('filter_scheduler', 'available_filters'),
    ('filter_scheduler', 'weight_classes'),
    ('filter_scheduler', 'enabled_filters'),
    ('filter_scheduler', 'host_subset_size'),
    ('opie', 'password'),
    ('opie', 'absent'),
])
def test_values_are_read_as_oslo_config_reads_them(tmp_path, section,
                                                   option):
    ini = inifile.IniFile(TRICKY)

    assert ini.get(section, option) == _oslo_values(tmp_path, TRICKY,
                                                    section, option)


def test_a_value_is_replaced_where_it_stands():
    ini = inifile.IniFile(TRICKY)

    assert ini.set('filter_scheduler', 'weight_classes', ['z.W'])

    # The continuation lines (the indented comment too) went with it.
    assert ini.text == TRICKY.replace(
        'weight_classes = x.W,\n    y.W\n  # indented, so part of the '
        'value above\n', 'weight_classes = z.W\n')


def test_a_new_option_goes_after_the_last_option_of_its_section():
    ini = inifile.IniFile('[a]\nx = 1\n\n# about b\n[b]\ny = 2\n')

    ini.set('a', 'z', ['3'])
    ini.set('b', 'z', ['4'])

    assert ini.text == '[a]\nx = 1\nz = 3\n\n# about b\n[b]\ny = 2\nz = 4\n'


def test_a_section_repeated_or_in_other_case_is_the_same_section():
    ini = inifile.IniFile(TRICKY)

    ini.set('filter_scheduler', 'host_subset_size', ['2'])
    ini.set('FILTER_SCHEDULER', 'new', ['v'])

    assert ini.text == TRICKY.replace(
        'host_subset_size = 1\n', 'host_subset_size = 2\nnew = v\n')


def test_a_missing_section_is_added_at_the_end():
    ini = inifile.IniFile('[DEFAULT]\ndebug = True')

    ini.set('compute', 'provider_config_location', ['/etc/nova/pc'])
    ini.set('compute', 'other', ['1'])

    assert ini.text == ('[DEFAULT]\ndebug = True\n\n[compute]\n'
                        'provider_config_location = /etc/nova/pc\n'
                        'other = 1\n')
    assert inifile.IniFile('').set('opie', 'costs', ['period'])


def test_multiple_values_reuse_the_lines_there_in_order():
    text = ('[s]\nm = one\n# keep me\nm=two\nm = three\nother = x\n')
    ini = inifile.IniFile(text)

    ini.set('s', 'm', ['one', 'two', 'four', 'five'])

    # "one" and "two" untouched, "three" rewritten, "five" added.
    assert ini.text == ('[s]\nm = one\n# keep me\nm=two\nm = four\n'
                        'm = five\nother = x\n')
    ini.set('s', 'm', ['one'])
    assert ini.text == '[s]\nm = one\n# keep me\nother = x\n'


def test_setting_the_values_there_changes_nothing():
    ini = inifile.IniFile(TRICKY)

    assert not ini.set('filter_scheduler', 'available_filters',
                       ['a.all', 'b.One'])
    assert not ini.set('DEFAULT', 'debug', ['True'])
    assert ini.text == TRICKY


@pytest.mark.parametrize('value', [' spaced ', '"quoted"', "'", '', 'a=b'])
def test_values_read_back_as_written(tmp_path, value):
    ini = inifile.IniFile('[opie]\n')

    ini.set('opie', 'password', [value])

    assert _oslo_values(tmp_path, ini.text, 'opie', 'password') == [value]
    assert not ini.set('opie', 'password', [value])


def test_a_value_on_two_lines_is_refused():
    with pytest.raises(inifile.IniError,
                       match='the value of password cannot span lines'):
        inifile.IniFile('').set('opie', 'password', ['a\nb'])


@pytest.mark.parametrize('text, message', [
    ('debug = True\n', "line 1: option 'debug = True' before any section "
     'header'),
    ('[a]\n\n  x\n', "line 3: indented line 'x' continues no option"),
    ('[a\n', "line 1: bad section header '[a'"),
    ('[]\n', "line 1: bad section header '[]'"),
    ('[a]\nx = 1\nflag\n', "line 3: no '=' or ':' in 'flag'"),
    ('[a]\n= 1\n', "line 2: no option name in '= 1'"),
])
def test_lines_oslo_config_refuses_are_named(tmp_path, text, message):
    with pytest.raises(inifile.IniError) as exc_info:
        inifile.IniFile(text)

    assert str(exc_info.value) == message
    # oslo.config refuses them too.
    with pytest.raises(cfg.ConfigFileParseError):
        _oslo_values(tmp_path, text, 'a', 'x')


def test_read_gives_an_empty_file_for_a_missing_one(tmp_path):
    assert inifile.read(str(tmp_path / 'absent.conf')).text == ''


def test_read_refuses_what_is_not_text(tmp_path):
    path = tmp_path / 'nova.conf'
    path.write_bytes(b'[a]\nx = \xff\n')

    with pytest.raises(inifile.IniError, match='not UTF-8 text: invalid '
                       'start byte at byte 8'):
        inifile.read(str(path))


def test_crlf_lines_stay_crlf_and_a_last_line_keeps_its_end(tmp_path):
    text = '[a]\r\nx = 1\r\n\r\n[b]\r\ny = 2'
    path = tmp_path / 'nova.conf'
    path.write_bytes(text.encode())
    ini = inifile.read(str(path))

    assert ini.get('a', 'x') == ['1']
    assert ini.text == text
    ini.set('a', 'x', ['3'])
    ini.set('a', 'z', ['4'])
    assert ini.text == '[a]\r\nx = 3\r\nz = 4\r\n\r\n[b]\r\ny = 2'
    ini.set('c', 'w', ['5'])
    assert ini.text == ('[a]\r\nx = 3\r\nz = 4\r\n\r\n[b]\r\ny = 2\r\n\r\n'
                        '[c]\r\nw = 5\r\n')


@pytest.mark.parametrize('value', ['pa$word1', '$', '$$', '${x}', 'a$'])
def test_a_dollar_is_escaped_from_interpolation(tmp_path, value):
    ini = inifile.IniFile('[opie]\n')

    ini.set('opie', 'password', [value])

    assert ini.text == '[opie]\npassword = %s\n' % value.replace('$', '$$')
    assert _oslo_values(tmp_path, ini.text, 'opie', 'password') == [value]
    assert not ini.set('opie', 'password', [value])


def test_removing_values_sections_and_what_empties_them():
    text = ('[DEFAULT]\ndebug = True\n\n[s]\nm = a\nm = opie\nn = 1\n\n'
            '[opie]\n# ours\nx = 1\n\n[t]\ny = 2\n\n[opie]\nz = 3\n')
    ini = inifile.IniFile(text)

    assert ini.remove_section('opie')
    assert ini.text == ('[DEFAULT]\ndebug = True\n\n[s]\nm = a\nm = opie\n'
                        'n = 1\n\n[t]\ny = 2\n')
    assert ini.set('s', 'm', ['a'])
    assert ini.set('t', 'y', [])
    assert ini.text == '[DEFAULT]\ndebug = True\n\n[s]\nm = a\nn = 1\n'
    assert not ini.remove_section('opie')
    assert not ini.set('t', 'y', [])
