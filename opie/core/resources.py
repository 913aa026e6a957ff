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

"""Resource vectors: vCPUs, RAM (MB) and disk (GB).

A request, an instance's flavor, a host's capacity and its free room are all
the same three-number vector, compared dimension by dimension.
"""
from typing import NamedTuple


class Resources(NamedTuple):
    vcpus: float = 0
    memory_mb: float = 0
    disk_gb: float = 0

    def __add__(self, other):
        return Resources(self.vcpus + other.vcpus,
                         self.memory_mb + other.memory_mb,
                         self.disk_gb + other.disk_gb)

    def __sub__(self, other):
        return Resources(self.vcpus - other.vcpus,
                         self.memory_mb - other.memory_mb,
                         self.disk_gb - other.disk_gb)

    def __mul__(self, factor):
        return Resources(self.vcpus * factor, self.memory_mb * factor,
                         self.disk_gb * factor)

    def covers(self, other):
        """True when this vector is at least ``other`` in every dimension."""
        return (self.vcpus >= other.vcpus
                and self.memory_mb >= other.memory_mb
                and self.disk_gb >= other.disk_gb)

    def shortfall(self, request):
        """What ``request`` lacks when this vector is the free room."""
        return Resources(max(0, request.vcpus - self.vcpus),
                         max(0, request.memory_mb - self.memory_mb),
                         max(0, request.disk_gb - self.disk_gb))

    def share(self, scale):
        """Each dimension as a fraction of ``scale``, summed (dimensions
        where ``scale`` is 0 are left out)."""
        return sum(amount / whole for amount, whole in zip(self, scale)
                   if whole > 0)

    def is_zero(self):
        return not (self.vcpus > 0 or self.memory_mb > 0 or self.disk_gb > 0)

    def __str__(self):
        return '%g vCPU, %g MB RAM, %g GB disk' % self


ZERO = Resources()


def total(vectors):
    """The sum of an iterable of resource vectors."""
    vcpus = memory_mb = disk_gb = 0
    for r in vectors:
        vcpus += r.vcpus
        memory_mb += r.memory_mb
        disk_gb += r.disk_gb
    return Resources(vcpus, memory_mb, disk_gb)
