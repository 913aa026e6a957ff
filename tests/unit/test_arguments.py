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

"""opie.arguments: every command's number options take and refuse values
alike, and say so in one line naming the option, exit status 2."""
import argparse

import pytest

from opie import arguments
from opie import oneline
from opie.bot import cli as bot_cli
from opie.cmd import manage
from opie.lab import cli as lab_cli


def refused(parse, text):
    with pytest.raises(argparse.ArgumentTypeError) as exc:
        parse(text)
    return str(exc.value)


@pytest.mark.parametrize('text, value', [
    ('1', 1), ('10', 10), (' 7 ', 7), ('1_0', 10)])
def test_a_whole_number_within_its_bounds(text, value):
    assert arguments.whole_number(1, 10)(text) == value


@pytest.mark.parametrize('text, message', [
    ('0', 'must be >= 1, got 0'),
    ('-5', 'must be >= 1, got -5'),
    ('11', 'must be <= 10, got 11'),
    ('1.5', "expected a whole number, got '1.5'"),
    ('1e3', "expected a whole number, got '1e3'"),
    ('nan', "expected a whole number, got 'nan'"),
    ('', "expected a whole number, got ''"),
    ('ten', "expected a whole number, got 'ten'"),
])
def test_a_whole_number_out_of_bounds_or_not_one(text, message):
    assert refused(arguments.whole_number(1, 10), text) == message


def test_a_whole_number_without_bounds():
    parse = arguments.whole_number()
    assert parse('-3') == -3 and parse(str(10 ** 100)) == 10 ** 100


def test_a_bound_is_shown_as_written():
    assert refused(arguments.whole_number(0, 1e6), '1000001') == \
        'must be <= 1000000, got 1000001'
    assert refused(arguments.finite_number(0, 1e6), '1e300') == \
        'must be <= 1000000, got 1e+300'


@pytest.mark.parametrize('text, value', [
    ('1', 1.0), ('2.5', 2.5), ('1e-3', 0.001), ('1000', 1000.0)])
def test_a_finite_number_within_its_bounds(text, value):
    assert arguments.finite_number(0, 1000, minimum_included=False)(
        text) == value


@pytest.mark.parametrize('text', [
    'nan', 'NaN', 'inf', '-inf', 'Infinity', '1e400', '-1e400', 'x', '',
    '1,5'])
def test_nan_inf_and_non_numbers_are_not_finite_numbers(text):
    assert refused(arguments.finite_number(), text) == \
        'expected a finite number, got %r' % text


@pytest.mark.parametrize('parse, text, message', [
    (arguments.finite_number(0), '-0.5', 'must be >= 0, got -0.5'),
    (arguments.finite_number(0, minimum_included=False), '0',
     'must be > 0, got 0'),
    (arguments.finite_number(0, minimum_included=False), '-1e-300',
     'must be > 0, got -1e-300'),
    (arguments.finite_number(1), '1e-300', 'must be >= 1, got 1e-300'),
    (arguments.finite_number(maximum=2), '2.5', 'must be <= 2, got 2.5'),
])
def test_a_finite_number_out_of_bounds(parse, text, message):
    assert refused(parse, text) == message


def test_the_bounds_themselves_are_in():
    assert arguments.finite_number(0, 1)('0') == 0.0
    assert arguments.finite_number(0, 1)('1') == 1.0
    assert arguments.finite_number(
        0, 1, minimum_included=False)('5e-324') == 5e-324


def _parser():
    p = oneline.ArgumentParser(prog='prog')
    p.add_argument('--n', type=arguments.whole_number(1, 10))
    p.add_argument('--x', type=arguments.finite_number(0))
    arguments.add_os_cloud(p)
    return p


@pytest.mark.parametrize('argv, line', [
    (['--n', '0'], 'argument --n: must be >= 1, got 0'),
    (['--n', 'ten'], "argument --n: expected a whole number, got 'ten'"),
    (['--x', 'inf'], "argument --x: expected a finite number, got 'inf'"),
    (['--x=-1'], 'argument --x: must be >= 0, got -1'),
    # A value that would break the line is written as its escape.
    (['--n', '1\n2'], "argument --n: expected a whole number, "
     "got '1\\n2'"),
    (['--n', '1\u20282'], "argument --n: expected a whole number, "
     "got '1\\u20282'"),
])
def test_a_bad_value_is_one_line_and_exit_2(capsys, argv, line):
    with pytest.raises(SystemExit) as exc:
        _parser().parse_args(argv)
    assert exc.value.code == 2
    (err,) = capsys.readouterr().err.splitlines()
    assert err == 'prog: error: %s (see prog --help)' % line


def test_good_values_and_the_cloud_option():
    args = _parser().parse_args(['--n', '10', '--x', '0', '--os-cloud', 'c'])
    assert (args.n, args.x, args.os_cloud) == (10, 0.0, 'c')
    assert _parser().parse_args([]).os_cloud is None


@pytest.mark.parametrize('main, argv', [
    (manage.main, ['provider-config', '--vcpus', '0']),
    (bot_cli.main, ['sim', 'job.yaml', '--seeds', '0']),
    (lab_cli.main, ['up', '--computes', '0']),
])
def test_every_command_words_a_bad_number_alike(capsys, main, argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    (err,) = capsys.readouterr().err.splitlines()
    assert 'error: argument %s: must be >= 1, got 0 (see ' % argv[-2] in err
