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

"""The interface every cost plugin implements."""
import abc


class Cost(metaclass=abc.ABCMeta):
    """Prices the preemption of one instance on one host.

    Costs must not be negative. ``period_seconds`` is the billing period
    the provider charges by; plugins that do not need it ignore it.
    """

    name = None

    def __init__(self, period_seconds):
        self.period_seconds = period_seconds

    @abc.abstractmethod
    def instance_cost(self, instance, host, now):
        """Cost of preempting ``instance`` (a core Instance) at ``now``."""

    def offset(self, shortfall, host):
        """A constant added once to every victim set covering ``shortfall``.

        Zero for purely per-instance costs; a set-level cost that is a
        per-instance sum plus a constant (such as leftover) uses it so the
        reported cost of a set is the real one.
        """
        return 0.0
