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

"""A preemptible flavor's terms: tier, minimum uptime, notice and maximum
lifetime (issues 26, 27).

Extra specs are strings anyone with the admin role may set to anything:
a bad value is read as the term's default, never guessed at, and the
audit names it with the command that sets it right."""
import pytest

from opie.core import flavor_spec

SMALL = flavor_spec.Flavor('p.small', 1, 2048, 20)
SPECS = flavor_spec.preemptible_specs(SMALL)


def _flavor(**terms):
    specs = dict(SPECS, **{'opie:' + key: value
                           for key, value in terms.items()})
    return flavor_spec.Flavor('p.small', 1, 2048, 20, extra_specs=specs)


def test_unset_terms_are_tier_0_and_the_default_uptime():
    assert flavor_spec.terms(SPECS, 600) == (flavor_spec.Terms(0, 600), [])
    assert flavor_spec.terms(SPECS) == (flavor_spec.Terms(0, 0), [])


def test_set_terms_are_read_whatever_the_default():
    specs = _flavor(tier='2', minimum_uptime='0').extra_specs

    assert flavor_spec.terms(specs, 600) == (flavor_spec.Terms(2, 0), [])


@pytest.mark.parametrize('value', [
    '-1', '+1', '1.5', '1e3', '1_000', ' 1', '1 ', '', 'high', '\u0661',
    '1\n', str(flavor_spec.MAX_TIER + 1), '9' * 5000])
def test_a_bad_tier_is_tier_0_and_a_problem_with_its_fix(value):
    flavor = _flavor(tier=value, minimum_uptime='60')

    terms, bad = flavor_spec.terms(flavor.extra_specs, 600)
    found = flavor_spec.check(flavor)

    assert terms == flavor_spec.Terms(0, 60)
    assert [term.spec for term, _ in bad] == ['opie:tier']
    assert len(found) == 1
    assert found[0].message == (
        'opie:tier=%r is not a whole number from 0 to 1000, so the '
        'scheduler reads it as tier 0'
        % (value if len(value) < 40 else value[:40] + '...'))
    assert found[0].fix == 'opie-manage flavor set-terms p.small --tier N'


@pytest.mark.parametrize('value', [
    '-60', '60.0', '10m', str(flavor_spec.MAX_MINIMUM_UPTIME + 1)])
def test_a_bad_uptime_is_the_default_and_a_problem_with_its_fix(value):
    flavor = _flavor(tier='1', minimum_uptime=value)

    terms, _ = flavor_spec.terms(flavor.extra_specs, 600)
    found = flavor_spec.check(flavor)

    assert terms == flavor_spec.Terms(1, 600)
    assert len(found) == 1
    assert found[0].message.endswith('so the scheduler reads it as [opie] '
                                     'minimum_uptime')
    assert found[0].fix == ('opie-manage flavor set-terms p.small '
                            '--minimum-uptime N')


@pytest.mark.parametrize('value', [
    '-1', '30s', '2.5', str(flavor_spec.MAX_NOTICE + 1)])
def test_a_bad_notice_is_the_default_and_a_problem_with_its_fix(value):
    flavor = _flavor(notice=value)

    terms, _ = flavor_spec.terms(flavor.extra_specs, 600, 120)
    found = flavor_spec.check(flavor)

    assert terms == flavor_spec.Terms(0, 600, 120)
    assert [p.fix for p in found] == [
        'opie-manage flavor set-terms p.small --notice N']
    assert found[0].message.endswith('so the scheduler reads it as [opie] '
                                     'preemption_notice')


def test_a_notice_set_is_read_whatever_the_default():
    assert flavor_spec.terms(_flavor(notice='0').extra_specs, 0, 120)[0] \
        == flavor_spec.Terms(0, 0, 0)
    assert flavor_spec.terms(SPECS, 0, 120)[0] == flavor_spec.Terms(
        0, 0, 120)


@pytest.mark.parametrize('value', [
    '-1', '1d', '3600.0', str(flavor_spec.MAX_MAXIMUM_LIFETIME + 1)])
def test_a_bad_lifetime_is_the_default_and_a_problem_with_its_fix(value):
    flavor = _flavor(maximum_lifetime=value)

    terms, _ = flavor_spec.terms(flavor.extra_specs, 0, 0, 86400)
    found = flavor_spec.check(flavor)

    assert terms == flavor_spec.Terms(0, 0, 0, 86400)
    assert [p.fix for p in found] == [
        'opie-manage flavor set-terms p.small --maximum-lifetime N']
    assert found[0].message.endswith('so the scheduler reads it as [opie] '
                                     'maximum_lifetime')


def test_a_lifetime_set_is_read_whatever_the_default():
    assert flavor_spec.terms(_flavor(maximum_lifetime='0').extra_specs,
                             0, 0, 86400)[0] == flavor_spec.Terms()
    assert flavor_spec.terms(SPECS, 0, 0, 86400)[0] == flavor_spec.Terms(
        maximum_lifetime=86400)


def test_a_lifetime_below_the_minimum_uptime_is_a_problem_and_waits():
    flavor = _flavor(minimum_uptime='3600', maximum_lifetime='600')

    terms, bad = flavor_spec.terms(flavor.extra_specs)
    found = flavor_spec.check(flavor)

    assert bad == []
    assert terms.lifetime() == 3600
    assert [(p.message, p.fix) for p in found] == [(
        'opie:maximum_lifetime=600 is below opie:minimum_uptime=3600: a '
        'server is ended only once its minimum uptime is over, so its '
        'maximum lifetime is 3600 s',
        'opie-manage flavor set-terms p.small --maximum-lifetime N '
        '(N >= 3600, or 0 for none)')]


@pytest.mark.parametrize('uptime, lifetime, ended_at', [
    (0, 0, None), (3600, 0, None), (0, 600, 600), (600, 600, 600),
    (600, 3600, 3600)])
def test_a_lifetime_is_never_before_the_minimum_uptime(uptime, lifetime,
                                                       ended_at):
    terms = flavor_spec.Terms(minimum_uptime=uptime,
                              maximum_lifetime=lifetime)

    assert terms.lifetime() == ended_at
    assert flavor_spec.check(_flavor(minimum_uptime=str(uptime),
                                     maximum_lifetime=str(lifetime))) == []


def test_the_bounds_are_good_values():
    flavor = _flavor(tier=str(flavor_spec.MAX_TIER), minimum_uptime=str(
        flavor_spec.MAX_MINIMUM_UPTIME), notice=str(flavor_spec.MAX_NOTICE),
        maximum_lifetime=str(flavor_spec.MAX_MAXIMUM_LIFETIME))

    assert flavor_spec.check(flavor) == []
    assert flavor_spec.terms(flavor.extra_specs)[0] == flavor_spec.Terms(
        flavor_spec.MAX_TIER, flavor_spec.MAX_MINIMUM_UPTIME,
        flavor_spec.MAX_NOTICE, flavor_spec.MAX_MAXIMUM_LIFETIME)


def test_terms_on_a_normal_flavor_are_a_problem():
    normal = flavor_spec.Flavor('m1.small', 1, 2048, 20, extra_specs={
        'opie:tier': '1', 'opie:minimum_uptime': 'x',
        'opie:maximum_lifetime': '60'})

    found = flavor_spec.check(normal)

    assert [(p.message, p.fix) for p in found] == [(
        'sets opie:tier, opie:minimum_uptime, opie:maximum_lifetime but is '
        'not preemptible: terms of preemption mean nothing to its servers',
        'openstack flavor unset --property opie:tier --property '
        'opie:minimum_uptime --property opie:maximum_lifetime m1.small')]


def test_terms_do_not_make_a_flavor_normal():
    assert flavor_spec.refusal(_flavor(tier='x')) is None
