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

"""The Nova-free preemption core.

Everything that decides *where* a request goes and *which* preemptible
instances die for it lives here, with no import of Nova: resource vectors
(:mod:`.resources`), the two host states h_f and h_n (:mod:`.host`), the
cost plugins (:mod:`.costs`), exact victim selection (:mod:`.victims`) and
one scheduling decision end to end (:mod:`.scheduling`). So does the model
the tools share: the preemptible contract (:mod:`.preemptible`), what a
preemptible flavor's extra specs must be (:mod:`.flavor_spec`), the
compute's provider config (:mod:`.provider_config`) and Nova's sizing
of it (:mod:`.sizing`), cloud snapshots
(:mod:`.snapshot`) and the problems checks report (:mod:`.problems`). The
Nova plugin, ``opie-manage`` and ``opie-bot`` are thin layers over it;
nothing here imports them (``tests/unit/test_layout.py``).
"""
