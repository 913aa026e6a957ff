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

"""opie-bot: run a Bag-of-Tasks job on preemptible servers within a deadline.

The client follows HADS (Teylo et al., Cluster Computing 2020): a primary
map puts tasks on preemptible servers up to a reduced deadline Dspot, and an
event-driven executor (:mod:`opie.bot.hads.executor`, HADS' dynamic scheduler)
migrates the tasks of a preempted server to idle, busy or new normal
servers in time for the real deadline.  The executor acts; it asks
:mod:`opie.bot.hads.assign` where a task goes (Alg. 4, 6, 7, 8 and Eq. 4) and
the take-over watch (:mod:`opie.bot.hads.takeover_watch`, over the maps of
:mod:`opie.bot.hads.takeover`) when the job must go to normal servers alone.
The core is pure: it talks to the cloud only through
:mod:`opie.bot.hads.interfaces`, and the default backend, :mod:`opie.bot.sim`,
is a discrete-event simulated cloud.

The primary map is built from the job alone (:mod:`opie.bot.hads.job_map`).
Which map a job runs, the HADS map or the normal-only baseline, is chosen
by :mod:`opie.bot.sim.map_choice`, which runs both on the simulated cloud
whatever backend then runs the job.
"""
