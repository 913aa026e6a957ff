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

"""What runs on timers in the scheduler: the reconciler and the leadership
that lets one process run it, maximum lifetimes, interruption rates, the
heartbeat and the clean-up of shelve images.

It uses the request's modules (a repair is a claim, as a request's is),
never the other way round. The design: ``doc/source/design/index.rst``,
"Modules in detail".
"""
