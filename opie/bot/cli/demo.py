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

"""``opie-bot demo``: a job on an in-process OpenStack cloud."""
from opie.bot.cli import common


def cmd_demo(args):
    # The demo cloud is Nova's test harness, which opie-bot neither needs
    # nor installs: this is the only place opie.bot names opie.testing,
    # and only when the demo runs.
    from opie.testing import democloud
    try:
        cloud = democloud.load()
    except democloud.Unavailable as exc:
        raise common.InputError('opie-bot demo: %s' % exc) from None
    from opie.testing.democloud import demo
    return demo.run(cloud, args)
