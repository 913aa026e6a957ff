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

"""``opie-bot watch``: a job's status, again and again, until it ends.

It reads the job as ``status`` does: the journal only, so it never
turns a client away and may run beside one; for a job on a controller,
the controller's records copied from the store first, so it follows
the controller too.  The loop takes its reader, its
display and its pause as arguments, so nothing in it depends on time.
"""
import time

from opie.bot.state import lifecycle

DEFAULT_INTERVAL = 10.0
# The pause between two looks (the tests put their own here).
pause = time.sleep


def follow(read, show, interval, count=None, sleep=None):
    """``show(read())`` every ``interval`` seconds until the job has
    ended (neither running nor paused), or ``count`` times; the last
    status."""
    sleep = sleep or pause
    looks = 0
    while True:
        status = read()
        show(status)
        looks += 1
        if status['status'] not in (lifecycle.RUNNING, lifecycle.PAUSED) \
                or looks == count:
            return status
        sleep(interval)
