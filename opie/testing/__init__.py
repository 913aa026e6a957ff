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

"""What OPIE's tests, benchmarks and ``opie-bot demo`` run OPIE on, kept in
the package so that none of them imports a test module.

* :mod:`harness`, :mod:`guests` and :mod:`cloud`: Nova + Placement in this
  process set up for OPIE, for the functional tests and
  ``benchmarks/scheduler.py`` and ``benchmarks/scale.py``;
* :mod:`democloud`: that harness with Nova's API on a real port, behind
  ``opie-bot demo`` and the client's functional tests;
* :mod:`lab`: the running lab's clients (:mod:`opie.lab`), for the
  integration tests and ``benchmarks/storm.py``;
* :mod:`notification_samples`: OPIE's notification samples and the check
  that a notification has a sample's shape, for the functional and the
  integration tests (it imports no Nova).

None of it is for production: the first three need Nova and its test
packages (the ``functional`` extra), :mod:`lab` the lab's venv.
"""
