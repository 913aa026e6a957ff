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

"""A problem a check finds, and how to fix it.

Every check (of a flavor, :func:`.flavor_spec.check`; of a host's
configuration or of a cloud, ``opie-manage audit``) returns a list of
:class:`Problem`; an empty list means the check passed. The subject names
the thing at fault (a flavor, a compute node, a nova.conf option) so an
operator can find it, and the fix is a command or an edit to make, not a
diagnosis to research.
"""
import dataclasses


@dataclasses.dataclass(frozen=True)
class Problem:
    subject: str
    message: str
    fix: str

    def __str__(self):
        return 'PROBLEM %s: %s\n    fix: %s' % (self.subject, self.message,
                                                self.fix)
