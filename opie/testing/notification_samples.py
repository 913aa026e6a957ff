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

"""OPIE's notification samples (``doc/notification_samples``), and the
check that a notification read from the bus has a sample's shape.

A sample is a notification as oslo.messaging delivers it to a listener:
``event_type``, ``priority``, ``publisher_id`` and the ``payload``, a
versioned object's primitive (``nova_object.name``, ``.namespace``,
``.version``, ``.data``), as Nova's own samples are. A notification has a
sample's shape (:func:`mismatches`) when it has the same keys at every
level, values of the same JSON types, the same object names, namespaces
and versions, and the same event type and priority; other values (uuids,
times, hosts, costs) may differ, and each element of a list has the shape
of the sample list's first. The functional tests check the notifications
of a real preemption this way; a lab test reading one from RabbitMQ can do
the same. Nothing here imports Nova.
"""
import json
import pathlib

DIRECTORY = pathlib.Path(__file__).resolve().parents[2] / 'doc' / \
    'notification_samples'
# Keys whose values must equal the sample's, not only have its type.
EXACT = ('event_type', 'priority', 'nova_object.name',
         'nova_object.namespace', 'nova_object.version')


def load(name):
    """The sample ``doc/notification_samples/<name>.json``."""
    return json.loads((DIRECTORY / (name + '.json')).read_text())


def mismatches(sample, actual, where='notification'):
    """How ``actual`` differs from ``sample`` in shape, one line each
    (none: same shape)."""
    if isinstance(sample, dict) and isinstance(actual, dict):
        found = ['%s: keys %s not in the sample, %s missing'
                 % (where, sorted(set(actual) - set(sample)),
                    sorted(set(sample) - set(actual)))] \
            if set(sample) != set(actual) else []
        for key in sorted(set(sample) & set(actual)):
            if key in EXACT and sample[key] != actual[key]:
                found.append('%s.%s: %r, the sample has %r'
                             % (where, key, actual[key], sample[key]))
            else:
                found += mismatches(sample[key], actual[key],
                                    '%s.%s' % (where, key))
        return found
    if isinstance(sample, list) and isinstance(actual, list) and sample:
        return [line for i, item in enumerate(actual)
                for line in mismatches(sample[0], item,
                                       '%s[%d]' % (where, i))]
    if type(sample) is not type(actual):
        return ['%s: %s %r, the sample has a %s'
                % (where, type(actual).__name__, actual,
                   type(sample).__name__)]
    return []
