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

"""OPIE's versioned notifications keep their word (issue 27): a payload's
fields are pinned to its version, as Nova's ``test_notification.py`` pins
Nova's, so a field added or changed without the version bump that
:mod:`opie.nova.notifications` prescribes fails here; and they go where Nova's
``[notifications] notification_format`` sends Nova's own."""
import nova.conf
from nova.objects import base as nova_base
from nova.objects import fields
from oslo_config import fixture as config_fixture
from oslo_versionedobjects import fixture as ovo_fixture
import pytest

from opie.nova import notifications

# '<version>-<hash of the fields>' of every payload. A failure here means a
# payload's fields changed: bump its VERSION (minor for a field added,
# major for one removed or changed in meaning), note it in
# opie/nova/notifications.py, then copy the new hash here.
OBJECT_DATA = {
    'PreemptionErrorPayload': '1.1-2afd7752feb04ce8d665c4eb324710cb',
    'PreemptionExplanationPayload': '1.0-4dbce120c3638961e69985b22d5d7636',
    'PreemptionNoticePayload': '1.0-a89b173605a55ee4b2bca28d3769e404',
    'PreemptionPayload': '1.1-d14461776b181a28a8688fdf4a139a09',
    'PreemptionRefusalPayload': '1.0-a67bc0766e84d1161c1d1bc672f33fe4',
    'PreemptionRequestPayload': '1.0-7ecc747f1ede246a25b7563769a8d86b',
    'PreemptionRunnerUpPayload': '1.0-60376710f69283b02b24ab6e74649601',
    'PreemptionVictimPayload': '1.1-ec40c1598c88f725e884b310853aea4e',
}
# Nova's objects OPIE's payloads carry, at the version the samples show: a
# new one changes OPIE's notifications too (a version bump of OPIE's, a
# sample and a release note).
CARRIED = {'ExceptionPayload': '1.1'}


def changed(classes, expected):
    """{name: (pinned, now)} of the ``classes`` whose version and fields
    differ from ``expected``."""
    checker = ovo_fixture.ObjectVersionChecker(
        {cls.obj_name(): [cls] for cls in classes})
    return {name: (expected.get(name), now)
            for name, now in checker.get_hashes().items()
            if expected.get(name) != now}


def test_every_payload_is_pinned_to_its_version():
    assert changed(notifications.PAYLOADS, OBJECT_DATA) == {}


def test_a_field_added_without_a_version_bump_fails():
    @nova_base.NovaObjectRegistry.register_if(False)
    class PreemptionPayload(notifications.PreemptionPayload):
        fields = {'added': fields.StringField()}

    assert list(changed([PreemptionPayload], OBJECT_DATA)) == [
        'PreemptionPayload']


def test_the_nova_objects_carried_keep_their_versions():
    ours = {cls.obj_name() for cls in notifications.PAYLOADS}
    carried = {field.AUTO_TYPE._obj_name
               for cls in notifications.PAYLOADS
               for field in cls.fields.values()
               if isinstance(field, fields.ObjectField)} - ours
    novas = {cls.obj_name(): cls.VERSION
             for cls in nova_base.NovaObjectRegistry.notification_classes}
    assert {name: novas[name] for name in carried} == CARRIED


@pytest.mark.parametrize('notification_format, topics', [
    ('versioned', ['versioned_notifications']),
    ('both', ['versioned_notifications', 'notifications']),
    ('unversioned', ['notifications']),
])
def test_topics_follow_novas_notification_format(notification_format,
                                                 topics):
    config = config_fixture.Config(nova.conf.CONF)
    config.setUp()
    try:
        config.config(group='notifications',
                      notification_format=notification_format)
        assert notifications.topics() == topics
    finally:
        config.cleanUp()
