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

"""One normal boot on a lab full of preemptible servers, every output of
its preemption checked (issue point 1, issue 13 points 6 and 7, issue 27).

Filling the lab takes most of the time, so the module fixture tells the
story once: tenant alpha fills every compute with small preemptible
servers, the youngest last (the cheapest under the default period cost:
the least of its billing period is lost); tenant beta boots a normal one.
Each test reads one output. The normal server is ACTIVE on the youngest's
host, only the youngest is deleted, and alpha reads why in its actions. A
queue of our own, bound before the fill to Nova's exchange with the
versioned topic's INFO routing key (Nova's queues left alone), gets
``opie.preempt.end`` in the shape of ``doc/notification_samples``' sample.
Summed over the workers' Prometheus textfiles: one more instance preempted
for a request, one more victim, every boot placed and timed. With the rates
published at each reconcile pass, alpha reads rates above 0 and their time
in the flavor's extra specs, which the audit finds sound. ``opie-manage
plan`` on a snapshot of the full lab names the scheduler's host and victim.
"""
import datetime
import json
import os
import types

import kombu
import pytest

from opie.core import contract
from opie.testing import lab
from opie.testing import notification_samples

FLAVOR = 'small-preemptible'
EXCHANGE = 'nova'
ROUTING_KEY = 'versioned_notifications.info'
# What a listener gets of oslo.messaging's message: a sample's keys.
DELIVERED = ('event_type', 'priority', 'publisher_id', 'payload')
PREEMPTED = ('opie_preemptions_total',
             (('mode', 'delete'), ('reason', 'request')))
PLACED = ('opie_victims_per_request_count', ())
VICTIMS = ('opie_victims_per_request_sum', ())
ANSWERED = ('opie_select_destinations_seconds_count', ())


def _received(channel, queue):
    """The notifications in ``queue`` now, oslo.messaging's envelope
    opened."""
    found = []
    while True:
        message = channel.basic_get(queue, no_ack=True)
        if message is None:
            return found
        envelope = json.loads(message.body)
        found.append(json.loads(envelope['oslo.message']))


def _published(client):
    return client.flavors.find(name=FLAVOR).get_keys()


def _told(channel, queue):
    """Wait for OPIE's first notifications on the queue; them."""
    seen = []

    def told():
        seen.extend(n for n in _received(channel, queue)
                    if n['event_type'].startswith('opie.'))
        return seen
    return lab.wait_for('opie.preempt.end on %s' % ROUTING_KEY, told)


def _moved(before, boots):
    """Wait until the metrics count ``boots`` more and a preemption; the
    metrics then."""
    def moved():
        # The preempting worker writes its file at once; the others at
        # their next heartbeat.
        after, _ = lab.read_metrics()
        if (after.get(PREEMPTED, 0) > before.get(PREEMPTED, 0)
                and after.get(PLACED, 0) >= before.get(PLACED, 0) + boots
                and after.get(ANSWERED, 0) >= before.get(ANSWERED, 0)
                + boots):
            return after
        return None
    return lab.wait_for('the boots and the preemption to be counted', moved)


def _rated(client):
    """Wait for the reconciler to publish a rate above 0 for every
    window; the flavor's extra specs then."""
    def rated():
        specs = _published(client)
        rates = contract.published(specs)
        return all(rate and rate > 0 for rate in rates.values()) and specs
    return lab.wait_or_show('the reconciler to publish the preemption',
                            rated, lambda: _published(client))


@pytest.fixture(scope='module')
def story(fast_rates_schedulers, tmp_path_factory):
    """The preemption told once, and all its tests read of it: gathered
    here, since each test's ``empty_cloud`` deletes every server before
    and after it."""
    # Module fixtures run before the first test's empty_cloud (which says
    # so when the lab is down).
    why = lab.require_up()
    if why:
        pytest.fail(why, pytrace=False)
    lab.delete_all()
    # Deleted servers may hold allocations a moment longer than they are
    # listed; the fill needs the whole lab.
    lab.wait_for('Placement to free every deleted server', lambda: all(
        used == 0 for usage in lab.usages_and_capacity().values()
        for rc, (used, _) in usage.items() if rc != 'CUSTOM_OPIE_HOST'))
    alpha = lab.nova('lab-alpha')
    found = types.SimpleNamespace()
    # oslo.messaging's rabbit:// is AMQP 0-9-1, kombu's amqp://.
    url = lab.LAB.transport_url.replace('rabbit:', 'amqp:', 1)
    with kombu.Connection(url) as conn:
        channel = conn.channel()
        queue = channel.queue_declare('', exclusive=True,
                                      auto_delete=True).queue
        channel.queue_bind(queue, EXCHANGE, ROUTING_KEY)
        found.metrics_before = lab.wait_for(
            'every scheduler worker\'s metrics file',
            lambda: os.path.isdir(lab.METRICS_DIR) and lab.read_metrics())

        found.older, found.youngest = lab.fill_with_preemptibles(alpha)
        found.victim_host = getattr(
            lab.settled({found.youngest})[found.youngest],
            'OS-EXT-SRV-ATTR:host')
        path = tmp_path_factory.mktemp('snapshot') / 'lab.json'
        found.snapshot = lab.opie_manage('snapshot', '--os-cloud',
                                         'lab-admin', '--output', path)
        found.plan = lab.opie_manage('plan', '--snapshot', path, '--flavor',
                                     'small', '--format', 'json')
        found.alpha_before = {s.id for s in alpha.servers.list()}

        found.normal, = lab.boot(lab.nova('lab-beta'), 'normal', 'small')
        found.server = lab.settled({found.normal})[found.normal]
        found.notifications = _told(channel, queue)

    lab.wait_or_show('the victim to be deleted', lambda: (
        found.youngest not in {s.id for s in alpha.servers.list()}),
        lambda: (found.server.status, getattr(found.server, 'fault', None)))
    found.alpha_after = {s.id for s in alpha.servers.list()}
    # At 2.21 the owner lists the actions of a deleted server.
    found.actions = [a.action for a in lab.nova(
        'lab-alpha', '2.21').instance_action.list(found.youngest)]
    # Every filler and the normal server.
    found.metrics_after = _moved(found.metrics_before[0],
                                 len(found.older) + 2)
    found.specs = _rated(alpha)
    found.audit = lab.opie_manage('audit', '--os-cloud', 'lab-admin')
    return found


def test_normal_boot_preempts_the_cheapest_preemptible(story):
    assert story.server.status == 'ACTIVE'
    assert getattr(story.server, 'OS-EXT-SRV-ATTR:host') == \
        story.victim_host
    assert story.alpha_after == set(story.older)
    assert story.actions.count('opie-preempt') == 1, story.actions


def test_a_preemption_is_told_on_the_versioned_topic(story):
    assert story.server.status == 'ACTIVE'
    notification, = story.notifications
    delivered = {key: notification[key] for key in DELIVERED}
    sample = notification_samples.load('opie-preempt-end')
    assert notification_samples.mismatches(sample, delivered) == []
    assert notification['publisher_id'].startswith('opie-scheduler:')
    data = notification['payload']['nova_object.data']
    assert data['reason'] == 'request'
    assert data['instance_uuid'] == story.normal
    assert [v['nova_object.data']['uuid'] for v in data['victims']] == [
        story.youngest]
    assert data['victims'][0]['nova_object.data']['terminated'] is True


def test_counters_move_with_a_preemption(story):
    before, workers = story.metrics_before
    # Each file is one worker's: its samples carry its own host and slot.
    assert workers and all(named == {worker}
                           for worker, named in workers.items())
    assert story.server.status == 'ACTIVE'
    after = story.metrics_after
    assert after[PREEMPTED] == before.get(PREEMPTED, 0) + 1
    # Only the normal boot took a victim, one.
    assert after[VICTIMS] == before.get(VICTIMS, 0) + 1


def test_a_preemption_shows_in_the_flavor_rates(story):
    assert story.server.status == 'ACTIVE'
    specs = story.specs
    assert all(rate and rate > 0 for rate in contract.published(
        specs).values()), specs
    updated = datetime.datetime.strptime(
        specs[contract.UPDATED_SPEC], '%Y-%m-%dT%H:%M:%SZ')
    assert updated <= datetime.datetime.utcnow() + datetime.timedelta(
        minutes=5)
    # The flavor keeps its contract: the audit reports nothing of it.
    assert specs['opie:preemptible'] == 'true'
    code, out = story.audit
    assert code == 0 and 'interruptions' not in out, out


def test_plan_on_a_snapshot_of_the_lab_is_what_the_scheduler_does(story):
    for code, out in (story.snapshot, story.plan):
        assert code == 0, out
    planned = json.loads(story.plan[1])
    assert len(planned['victims']) == 1, planned
    assert story.server.status == 'ACTIVE'
    assert getattr(story.server, 'OS-EXT-SRV-ATTR:hypervisor_hostname') == \
        planned['host']
    assert story.alpha_before - story.alpha_after == \
        set(planned['victims'])
