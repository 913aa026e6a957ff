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

"""Interruption rates: preemptions per server-day of a flavor, over the
last day and the last week, and the extra specs that publish them."""
import datetime

from opie.core import contract
from opie.core import flavor_spec
from opie.core import interruptions

NOW = datetime.datetime(2026, 3, 10, 12, 0)
DAY = datetime.timedelta(days=1)
HOUR = datetime.timedelta(hours=1)


def _life(flavor, born, died=None, uuid=None):
    return interruptions.Life(uuid or '%s-%s' % (flavor, born), flavor,
                              born, died)


def test_a_server_counts_only_the_time_it_lived_inside_each_window():
    lives = [
        # Born 10 days ago, still alive: a whole day and a whole week.
        _life('p', NOW - 10 * DAY),
        # Born two days ago, deleted 12 hours ago: half a day of the last
        # day, a day and a half of the week.
        _life('p', NOW - 2 * DAY, NOW - 12 * HOUR),
        # Deleted before the week began: nothing.
        _life('p', NOW - 20 * DAY, NOW - 8 * DAY),
    ]
    days = interruptions.server_days(lives, NOW)
    assert days == {'p': {'1d': 1.5, '7d': 8.5}}


def test_preemptions_count_in_the_windows_they_fall_in():
    lives = [_life('p', NOW - 10 * DAY, uuid='a'),
             _life('p', NOW - 10 * DAY, NOW - 3 * DAY, uuid='b')]
    preempted = [('a', NOW - 2 * HOUR), ('b', NOW - 3 * DAY),
                 # Before the week: counts nowhere.
                 ('a', NOW - 8 * DAY)]
    rates = interruptions.rates(lives, preempted, NOW)
    # Last day: 1 preemption over 1 server-day; last week: 2 over 7 + 4.
    assert rates == {'p': {'1d': 1.0, '7d': 2 / 11}}


def test_a_flavor_without_server_days_has_no_rate():
    lives = [_life('p', NOW - 20 * DAY, NOW - 8 * DAY),
             _life('q', NOW - 3 * DAY, NOW - 2 * DAY)]
    rates = interruptions.rates(lives, [], NOW, flavors=['p', 'q', 'r'])
    assert rates == {'p': {'1d': None, '7d': None},
                     'q': {'1d': None, '7d': 0.0},
                     'r': {'1d': None, '7d': None}}


def test_a_server_born_after_now_counts_nothing():
    # A clock behind the database's: never a negative server-day.
    assert interruptions.server_days(
        [_life('p', NOW + HOUR)], NOW) == {'p': {'1d': 0.0, '7d': 0.0}}


def test_published_specs_and_only_what_changed_is_written():
    specs = interruptions.specs({'1d': 1 / 3, '7d': None}, NOW)
    assert specs == {
        'opie:interruptions_per_server_day_1d': '0.333',
        'opie:interruptions_per_server_day_7d': 'unknown',
        'opie:interruptions_updated_at': '2026-03-10T12:00:00Z'}
    published = dict(specs, **{'opie:preemptible': 'true'})
    later = NOW + HOUR
    same = interruptions.specs({'1d': 1 / 3, '7d': None}, later)
    assert interruptions.to_write(published, same) == {}
    assert interruptions.to_write(
        published, interruptions.specs({'1d': 0.5, '7d': None}, later)) == {
        'opie:interruptions_per_server_day_1d': '0.5',
        'opie:interruptions_updated_at': '2026-03-10T13:00:00Z'}


def test_published_rates_read_back():
    specs = interruptions.specs({'1d': 0.25, '7d': None}, NOW)
    assert contract.published(specs) == {'1d': 0.25, '7d': None}
    assert contract.published({}) == {'1d': None, '7d': None}
    assert contract.published(
        {'opie:interruptions_per_server_day_1d': 'nan'})['1d'] is None


def test_published_rates_never_break_the_flavor_contract():
    small = flavor_spec.Flavor('p.small', 1, 2048, 20)
    specs = dict(flavor_spec.preemptible_specs(small),
                 **interruptions.specs({'1d': 2.0, '7d': None}, NOW))
    published = flavor_spec.Flavor('p.small', 1, 2048, 20, extra_specs=specs)
    assert flavor_spec.check(published) == []
    assert flavor_spec.refusal(published) is None
