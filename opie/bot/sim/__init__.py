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

"""The simulated cloud: opie-bot's default backend.

A discrete-event simulation (one heap of timers, no ticking) of servers
that boot, bill per second except while hibernated, and run tasks exactly
as long as the run model says, plus the preemption emulator of the HADS
paper (section 5.2.1) or the replay of a trace.  It implements the
interfaces of :mod:`opie.bot.hads.interfaces`, so the executor cannot tell it
from a real cloud.
"""
