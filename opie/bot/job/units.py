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

"""How opie-bot writes a duration, shared by the console and the report.

One formatter, so a makespan read on the console and in the HTML page is
the same string.
"""


def fmt_time(seconds):
    """``m:ss`` below an hour, ``h:mm:ss`` from an hour on.

    Minutes and seconds read faster than a count of seconds; past an hour
    a count of minutes ("95:00") stops reading as a time.
    """
    total = int(round(seconds))
    sign = '-' if total < 0 else ''
    minutes, secs = divmod(abs(total), 60)
    if minutes < 60:
        return '%s%d:%02d' % (sign, minutes, secs)
    hours, minutes = divmod(minutes, 60)
    return '%s%d:%02d:%02d' % (sign, hours, minutes, secs)
