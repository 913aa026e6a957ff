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

"""OPIE's notifications as Nova writes its versioned ones (issue 27): a
real preemption's ``opie.preempt.end`` and a failed termination's
``opie.preempt.error`` have the shape of their samples in
``doc/notification_samples``, as Nova's notification sample tests check
Nova's, and say what happened."""
import oslo_messaging

import nova.conf

from opie.nova import notifications
from opie.testing import notification_samples
from tests.functional import test_telling

CONF = nova.conf.CONF


class Samples(test_telling.OneHost):

    def assert_like_sample(self, name, message):
        """The notification as a listener reads it (oslo.messaging's
        envelope adds a message id and a timestamp) has the shape of the
        sample ``name``, and its publisher is this scheduler."""
        sample = notification_samples.load(name)
        read = {key: message[key] for key in sample}
        self.assertEqual([], notification_samples.mismatches(sample, read))
        self.assertEqual('opie-scheduler:%s' % CONF.host,
                         message['publisher_id'])

    def test_a_preemption_is_notified_as_its_sample(self):
        server = self.boot('large', 'normal')
        self.wait_for_terminations()

        [message] = self.notifications(notifications.END)
        self.assert_like_sample('opie-preempt-end', message)
        [notification] = self.preempt_notifications()
        payload = notification['payload']
        self.assertEqual(('request', server['id'], 'host-A', 'delete'),
                         (payload['reason'], payload['instance_uuid'],
                          payload['host'], payload['mode']))
        self.assertEqual(self.owner.project_id,
                         payload['victims'][0]['project_id'])
        self.assertEqual([], self.notifications(notifications.ERROR))

    def test_a_failed_termination_is_notified_as_its_sample(self):
        # The delete's message to the victim's compute is lost: the
        # victim runs on (the reconciler retries).
        def terminate_instance(api, *args, **kwargs):
            raise oslo_messaging.MessageDeliveryFailure('bus down')
        self.stub_out('nova.compute.rpcapi.ComputeAPI.terminate_instance',
                      terminate_instance)

        server = self.boot('large', 'normal')
        self.wait_for_terminations()

        [message] = self.notifications(notifications.ERROR)
        self.assert_like_sample('opie-preempt-error', message)
        payload = self.data(message['payload'])
        self.assertEqual(
            (server['id'], 'host-A', 'delete', self.victims[0]['id'],
             False),
            (payload['instance_uuid'], payload['host'], payload['mode'],
             payload['victim']['uuid'], payload['victim']['terminated']))
        self.assertEqual(('MessageDeliveryFailure', 'bus down'),
                         (payload['fault']['exception'],
                          payload['fault']['exception_message']))
        # The preemption's end still tells of it, not terminated.
        [notification] = self.preempt_notifications()
        self.assertEqual(
            [(self.victims[0]['id'], False)],
            [(v['uuid'], v['terminated'])
             for v in notification['payload']['victims']])
