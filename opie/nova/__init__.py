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

"""OPIE's Nova scheduler plugin (design A).

Preemptible flavors consume ``CUSTOM_PREEMPTIBLE_*`` resource classes
instead of the standard ones, so Placement's standard usage of a compute
node is h_n and standard plus custom usage is h_f. On top of that:

* :mod:`.filters` and :mod:`.weights` run inside any ``nova-scheduler``;
* :mod:`.manager` (started by ``opie-scheduler``, :mod:`.cmd`) picks,
  claims (:mod:`.request.claim`) and terminates (:mod:`.request.terminate`)
  victims in the same scheduling pass, keeping per-request state in
  :mod:`.request.plan`: :mod:`.request` is what runs inside a request;
* :mod:`.periodic` is what runs on timers: :mod:`.periodic.reconciler`
  repairs h_f overcommit left by concurrent requests.

Options live in the ``[opie]`` group of nova.conf (:mod:`.conf`).
"""
