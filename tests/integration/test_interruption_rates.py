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

"""Interruption rates a tenant reads with ``openstack flavor show``
(issue 27).

With the reconciler passing every few seconds and publishing the rates
at each pass (``fast_rates_schedulers``), tenant alpha fills every compute
with small preemptible servers and tenant beta boots a normal one, which
preempts one of them. After a reconcile pass, alpha reads the preemptible
flavor's extra specs, as any project may: a rate of more than 0 for the
last day and the last week, and the time it was computed; the audit finds
nothing wrong with the flavor.
"""
import datetime

import pytest

from opie.core import interruptions
from opie.testing import lab

pytestmark = pytest.mark.usefixtures('fast_rates_schedulers')
FLAVOR = 'small-preemptible'


def _published(client):
    return client.flavors.find(name=FLAVOR).get_keys()


def test_a_preemption_shows_in_the_flavor_rates():
    alpha = lab.nova('lab-alpha')
    older, youngest = lab.fill_with_preemptibles(alpha)
    beta = lab.nova('lab-beta')
    normal, = lab.boot(beta, 'normal', 'small')
    assert lab.settled({normal})[normal].status == 'ACTIVE'
    lab.wait_for('the victim to be deleted', lambda: youngest not in {
        s.id for s in alpha.servers.list()})

    def rated():
        rates = interruptions.published(_published(alpha))
        return all(rate and rate > 0 for rate in rates.values())
    lab.wait_or_show('the reconciler to publish the preemption', rated,
                     lambda: _published(alpha))

    specs = _published(alpha)
    updated = datetime.datetime.strptime(
        specs[interruptions.UPDATED_SPEC], '%Y-%m-%dT%H:%M:%SZ')
    assert updated <= datetime.datetime.utcnow() + datetime.timedelta(
        minutes=5)
    # The flavor keeps its contract: the audit reports nothing of it.
    assert specs['opie:preemptible'] == 'true'
    code, out = lab.opie_manage('audit', '--os-cloud', 'lab-admin')
    assert code == 0 and 'interruptions' not in out, out
