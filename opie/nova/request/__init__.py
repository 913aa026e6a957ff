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

"""What runs inside one scheduling request: the hosts read, the plan, the
claim in Placement, the termination or the notice, and the give-back of
what the request did not need.

Nothing here imports :mod:`opie.nova.periodic`
(``tests/unit/test_layout.py``): a request never waits on a timer's work.
The design: ``doc/source/design/index.rst``, "Modules in detail".
"""
