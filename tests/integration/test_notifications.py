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

"""A preemption's versioned notification, read from RabbitMQ as any
consumer of Nova's versioned notifications reads it (issue 27).

The test binds a queue of its own to Nova's exchange with the routing key
of the versioned topic's INFO priority before the preemption, so it takes
a copy of what opie-scheduler sends and leaves Nova's queues alone. What
it reads must have the shape of ``doc/notification_samples``' sample.
"""
import json

import kombu

from opie.testing import lab
from opie.testing import notification_samples

EXCHANGE = 'nova'
ROUTING_KEY = 'versioned_notifications.info'
# What a listener gets of oslo.messaging's message: a sample's keys.
DELIVERED = ('event_type', 'priority', 'publisher_id', 'payload')


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


def test_a_preemption_is_told_on_the_versioned_topic():
    # oslo.messaging's rabbit:// is AMQP 0-9-1, kombu's amqp://.
    url = lab.LAB.transport_url.replace('rabbit:', 'amqp:', 1)
    with kombu.Connection(url) as conn:
        channel = conn.channel()
        queue = channel.queue_declare('', exclusive=True,
                                      auto_delete=True).queue
        channel.queue_bind(queue, EXCHANGE, ROUTING_KEY)

        alpha = lab.nova('lab-alpha')
        _, youngest = lab.fill_with_preemptibles(alpha)
        lab.settled({youngest})
        normal, = lab.boot(lab.nova('lab-beta'), 'normal', 'small')
        assert lab.settled({normal})[normal].status == 'ACTIVE'

        seen = []

        def told():
            seen.extend(n for n in _received(channel, queue)
                        if n['event_type'].startswith('opie.'))
            return seen
        lab.wait_for('opie.preempt.end on %s' % ROUTING_KEY, told)

    notification, = seen
    delivered = {key: notification[key] for key in DELIVERED}
    sample = notification_samples.load('opie-preempt-end')
    assert notification_samples.mismatches(sample, delivered) == []
    assert notification['publisher_id'].startswith('opie-scheduler:')
    data = notification['payload']['nova_object.data']
    assert data['reason'] == 'request'
    assert data['instance_uuid'] == normal
    assert [v['nova_object.data']['uuid'] for v in data['victims']] == [
        youngest]
    assert data['victims'][0]['nova_object.data']['terminated'] is True
