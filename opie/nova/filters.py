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

"""PreemptibleFilter: does the request fit h_f, or can preemption make it?

Placement has already checked h_n (normal requests, standard classes) or
the preemptible quota of a host (``CUSTOM_PREEMPTIBLE_*``). This filter
checks h_f, everything on the host:

* a preemptible request passes a host only if it fits h_f (it never
  causes a preemption);
* a normal request passes a host if it fits h_f, or if an eligible set of
  the host's preemptible instances covers the h_f shortfall within
  ``[opie] max_victims`` (only under ``opie-scheduler``, and for moves only
  those listed in ``[opie] preempt_on_move``).

Under the stock ``nova-scheduler`` nothing can be preempted, so every
request must fit h_f: a safe mode that never overcommits a host.

Enable it with::

    [filter_scheduler]
    available_filters = nova.scheduler.filters.all_filters
    available_filters = opie.nova.filters.PreemptibleFilter
    enabled_filters = ...,PreemptibleFilter
"""
from nova.scheduler import filters

from opie.nova.request import host_records
from opie.nova.request import plan as plan_mod


class PreemptibleFilter(filters.BaseHostFilter):

    # A rebuild stays on its host and never preempts.
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        plan = plan_mod.current()
        if plan is None:
            return host_records.fits_host_state(host_state, spec_obj)
        return plan.passes(host_state)
