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

"""Safe mode: ``opie-scheduler`` on a Nova this OPIE was not built for.

OPIE's manager overrides private methods of Nova's scheduler
(:mod:`.compat`). On a Nova release it was not built for they may have
changed, and a claim half made at request time is worse than no
preemption. Yet a routine package upgrade of Nova must never leave a cloud
without a scheduler. So on such a Nova ``opie-scheduler`` starts this
manager instead of OPIE's: Nova's stock manager, plus a loud notice.

* Requests are scheduled as stock Nova schedules them. OPIE's
  ``PreemptibleFilter``, still enabled in nova.conf, lets a request through
  only where it fits counting every instance, preemptible ones included
  (h_f, from the compute node record: :mod:`.filters`): nothing is
  preempted and no host is filled past its capacity by a choice of the
  scheduler. (Two workers placing on one host at once are not serialised
  by the host token here; the reconciler, which would repair that, is
  OPIE's and does not run.)
* It says so at start and every ``[opie] heartbeat_interval``: an error
  line in the log, the heartbeat file with ``safe_mode`` (``opie-manage
  audit`` reports it as a problem) and the gauge ``opie_safe_mode`` = 1.

The cure is the OPIE release made for the installed Nova; the supported
Nova releases are the ``scheduler`` extra of OPIE's package metadata.
"""
from oslo_log import log as logging
from oslo_service import periodic_task

import nova.conf
from nova.scheduler import manager

from opie.nova import compat
from opie.nova import conf as opie_conf
from opie.nova import metrics
from opie.nova.periodic import heartbeat

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF


class SafeModeSchedulerManager(manager.SchedulerManager):

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.settings = opie_conf.load_settings(CONF)
        self.why = compat.problem() or 'safe mode was asked for'
        self._tell()

    def _tell(self):
        LOG.error('OPIE: SAFE MODE: %s. Scheduling as stock Nova: nothing '
                  'is preempted, and a request goes only where it fits '
                  'counting preemptible servers. Install the OPIE release '
                  'made for this Nova.', self.why)

    @periodic_task.periodic_task(spacing=CONF.opie.heartbeat_interval,
                                 run_immediately=True)
    def _opie_safe_mode(self, context):
        self._tell()
        try:
            heartbeat.beat(CONF.opie.heartbeat_path, self.host,
                           CONF.opie.heartbeat_interval, self.settings,
                           safe_mode=self.why)
        except OSError as exc:
            LOG.warning('OPIE: cannot write heartbeat %s: %s',
                        CONF.opie.heartbeat_path, exc)
        metrics.SAFE_MODE.set(1)
        metrics.export()
