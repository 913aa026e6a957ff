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

"""Extra specs Nova turns into Placement requests that the
preemptible-flavor contract check must see (found by an adversarial
review): a flavor that Placement charges to the standard classes too (its
room counted twice) or to more preemptible room than its size is not
preemptible."""
import pytest

from opie.core import flavor_spec


def medium(**extra):
    flavor = flavor_spec.Flavor('m', 2, 4000, 40)
    specs = flavor_spec.preemptible_specs(flavor)
    specs.update(extra)
    return flavor_spec.Flavor('m', 2, 4000, 40, extra_specs=specs)


@pytest.mark.parametrize('extra', [
    # A numbered request group asking standard VCPU besides the override.
    {'resources1:VCPU': '2'},
    # A named (suffixed) request group, Nova >= Xena.
    {'resources_extra:MEMORY_MB': '4000'},
    # Preemptible room asked twice: unnumbered and in a group.
    {'resources1:CUSTOM_PREEMPTIBLE_VCPU': '2'},
])
def test_request_groups_are_refused(extra):
    assert flavor_spec.refusal(medium(**extra)) is not None, extra


@pytest.mark.parametrize('value', ['02', ' 2', '+2', '2 '])
def test_amount_spellings_agree_with_nova(value):
    # Nova reads these with int() as OPIE does: the flavor keeps the
    # contract. (Holds.)
    assert flavor_spec.refusal(
        medium(**{'resources:CUSTOM_PREEMPTIBLE_VCPU': value})) is None
