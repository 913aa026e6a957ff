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

"""What a tenant reads of OPIE: names and formats, in one place.

The scheduler plugin writes them and ``opie-bot`` (and any tenant's tool)
reads them, through Nova's API: a flavor's extra specs (is it
preemptible, its twin's name, its published interruption rates) and a
server's metadata (the notice of its preemption). Both sides import them
from here, so that a name or a format cannot change on one side alone;
``opie-bot`` imports nothing else of ``opie.core``
(``tests/unit/test_layout.py``). Nova-free. The rates are computed by
:mod:`.interruptions`, the notice given by ``opie.nova.request.notice``; see
``doc/source/design/index.rst`` (Notice) and
``doc/source/tenant/index.rst``.
"""
import datetime
import math
import re

# A flavor's extra spec that makes its servers preemptible.
PREEMPTIBLE_SPEC = 'opie:preemptible'
# The values the scheduler plugin reads as "preemptible"; anything else but
# the FALSE ones is a typo the audit reports.
TRUE_VALUES = ('true', '1', 'yes')
FALSE_VALUES = ('false', '0', 'no', '')
# ``opie-manage flavor create-preemptible`` names a flavor's preemptible
# twin after it, and opie-bot finds the twin by that name.
NAME_SUFFIX = '-preemptible'

# A preemptible flavor's interruption rates: preemptions per server-day
# over each window, by the suffix of its extra spec, and when they were
# computed (UTC, RATE_TIME_FORMAT).
WINDOWS = {'1d': datetime.timedelta(days=1),
           '7d': datetime.timedelta(days=7)}
RATE_SPEC = 'opie:interruptions_per_server_day_%s'
UPDATED_SPEC = 'opie:interruptions_updated_at'
RATE_TIME_FORMAT = '%Y-%m-%dT%H:%M:%SZ'
# A rate with no server-day to divide by.
UNKNOWN = 'unknown'

# The server metadata key that gives notice: the time (ISO 8601, UTC) the
# server's clean shutdown begins.
NOTICE_KEY = 'opie:preempt_at'
# The notice's values a tenant's tool takes: what notice_stamp writes, or
# with a fraction, an offset, or none (UTC).
NOTICE_FORMAT = re.compile(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?'
                           r'(Z|[+-]\d\d:\d\d)?', re.ASCII)


def spec_value(extra_specs):
    """``opie:preemptible`` normalised: lower case, no surrounding space."""
    return str(extra_specs.get(PREEMPTIBLE_SPEC, '')).strip().lower()


def is_preemptible(extra_specs):
    return spec_value(extra_specs) in TRUE_VALUES


def published(extra_specs):
    """{window: rate or None} as a flavor's extra specs publish them."""
    found = {}
    for window in WINDOWS:
        try:
            rate = float(extra_specs.get(RATE_SPEC % window, UNKNOWN))
        except ValueError:
            rate = None
        found[window] = (rate if rate is not None and math.isfinite(rate)
                         and rate >= 0 else None)
    return found


def notice_stamp(when):
    """``when`` (naive or aware UTC) as the notice's value."""
    return when.replace(tzinfo=None, microsecond=0).isoformat() + 'Z'


def notice_time(value):
    """The time (epoch seconds) a :data:`NOTICE_KEY` value names, or None
    if it names none in :data:`NOTICE_FORMAT` (UTC unless it says
    otherwise)."""
    if not isinstance(value, str) or not NOTICE_FORMAT.fullmatch(value):
        return None
    try:
        when = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.timestamp()
