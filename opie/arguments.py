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

"""Option types and options that every OPIE command declares alike.

``opie-manage``, ``opie-bot`` and ``opie-lab`` take numbers on their
command lines; each number option's type comes from here, so that a bad
value is refused, and worded, the same way by every command: ``expected a
whole number, got 'x'``, ``expected a finite number, got 'nan'``, ``must
be >= 1, got 0``; times (:func:`moment`) likewise. Through
:class:`opie.oneline.ArgumentParser` that is one line naming the option,
exit status 2. ``--os-cloud`` is here too: both ``opie-manage`` and
``opie-bot`` connect through :func:`opie.clouds.connect`, so the option
means the same to both. Nothing here imports a cloud library, so
declaring options stays cheap for commands that never connect.
"""
import argparse
import datetime
import math


def whole_number(minimum=None, maximum=None):
    """An argparse type: a whole number within [minimum, maximum] (None:
    no bound on that side)."""
    return _bounded(_whole, 'a whole number', minimum, maximum, True)


def finite_number(minimum=None, maximum=None, minimum_included=True):
    """An argparse type: a finite number (``float()`` alone also takes
    nan and inf) within [minimum, maximum], or (minimum, maximum] if not
    ``minimum_included`` (None: no bound on that side)."""
    return _bounded(_finite, 'a finite number', minimum, maximum,
                    minimum_included)


def moment(text):
    """An argparse type: an ISO 8601 time (``2026-11-26``,
    ``2026-11-26T15:20``, ``2026-11-26T15:20:00Z``, ``...+01:00``) as an
    aware UTC datetime; one without a zone is taken as UTC, as Nova
    writes its times."""
    try:
        value = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            'expected an ISO 8601 time such as 2026-11-26T15:20:00Z, got %r'
            % text) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value.astimezone(datetime.timezone.utc)


def add_os_cloud(parser, help='cloud of clouds.yaml (default: $OS_CLOUD, '
                 'else the OS_* variables)'):
    """``--os-cloud NAME``: the cloud of clouds.yaml the command connects
    to; ``help`` may say what leaving it out means to this command."""
    parser.add_argument('--os-cloud', metavar='NAME', help=help)


def _whole(text):
    try:
        return int(text)
    except ValueError:
        return None


def _finite(text):
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _bounded(parse, what, minimum, maximum, minimum_included):
    """An argparse type: ``parse(text)`` (None if it is not ``what``)
    within the bounds, or an error saying which the value missed."""
    def check(text):
        value = parse(text)
        if value is None:
            raise argparse.ArgumentTypeError('expected %s, got %r'
                                             % (what, text))
        if minimum is not None and (value < minimum if minimum_included
                                    else value <= minimum):
            raise argparse.ArgumentTypeError('must be %s %s, got %s' % (
                '>=' if minimum_included else '>', _shown(minimum),
                _shown(value)))
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError('must be <= %s, got %s' % (
                _shown(maximum), _shown(value)))
        return value
    return check


def _shown(number):
    """A number as people write it: 1000000, not 1000000.0 (1e+300
    stays)."""
    if isinstance(number, float) and number.is_integer() and \
            abs(number) < 1e16:
        number = int(number)
    return repr(number)
