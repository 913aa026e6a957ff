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

"""The check that a notification has its sample's shape
(:mod:`opie.testing.notification_samples`) catches what it must, on the
samples themselves."""
import copy

import pytest

from opie.testing import notification_samples

NAMES = ('opie-preempt-start', 'opie-preempt-end', 'opie-preempt-error')


@pytest.mark.parametrize('name', NAMES)
def test_a_sample_has_its_own_shape(name):
    sample = notification_samples.load(name)
    assert notification_samples.mismatches(sample, sample) == []


@pytest.mark.parametrize('name', NAMES)
def test_other_values_of_the_same_types_have_the_shape(name):
    sample = notification_samples.load(name)
    actual = copy.deepcopy(sample)
    data = actual['payload']['nova_object.data']
    data['host'] = 'elsewhere'
    data['instance_uuid'] = '00000000-0000-4000-8000-000000000000'
    actual['publisher_id'] = 'opie-scheduler:other'
    assert notification_samples.mismatches(sample, actual) == []


def changed(change):
    sample = notification_samples.load('opie-preempt-end')
    actual = copy.deepcopy(sample)
    change(actual['payload'])
    return notification_samples.mismatches(sample, actual)


def test_a_field_more_or_less_differs():
    assert changed(lambda p: p['nova_object.data'].update(added=1)) == [
        "notification.payload.nova_object.data: keys ['added'] not in the "
        "sample, [] missing"]
    assert changed(lambda p: p['nova_object.data'].pop('cost')) == [
        "notification.payload.nova_object.data: keys [] not in the "
        "sample, ['cost'] missing"]


def test_a_type_differs_in_a_list_item_too():
    def victim_terminated_as_text(payload):
        victim = payload['nova_object.data']['victims'][0]
        victim['nova_object.data']['terminated'] = 'yes'
    assert changed(victim_terminated_as_text) == [
        "notification.payload.nova_object.data.victims[0].nova_object.data"
        ".terminated: str 'yes', the sample has a bool"]


def test_an_object_version_differs():
    assert changed(lambda p: p.update({'nova_object.version': '1.0'})) == [
        "notification.payload.nova_object.version: '1.0', the sample has "
        "'1.1'"]
