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

"""Which Nova OPIE runs on, checked before the scheduler starts.

OPIE overrides private methods of Nova's ``SchedulerManager`` and wraps its
report client, so a Nova it was not built for would fail at request time,
with a half-made claim, instead of at start.  :func:`problem` reads the
installed Nova's release and the signatures of every method OPIE hooks;
on a mismatch ``opie-scheduler`` starts in safe mode instead
(:mod:`.safe_mode`) and ``opie-manage audit`` reports it.  Supported: Nova
34.x (2026.2), the ``scheduler`` extra of the package's metadata.
"""
import importlib.metadata
import inspect
import sys

SUPPORTED_MAJOR = 34
MANAGER = 'opie.nova.manager.OpieSchedulerManager'
SAFE_MODE_MANAGER = 'opie.nova.safe_mode.SafeModeSchedulerManager'
SUPPORTED = 'Nova %d.x (2026.2)' % SUPPORTED_MAJOR
# (module, class, method, parameters after self) OPIE overrides or calls.
HOOKS = (
    ('nova.scheduler.manager', 'SchedulerManager', '_schedule',
     ('context', 'spec_obj', 'instance_uuids', 'alloc_reqs_by_rp_uuid',
      'provider_summaries', 'allocation_request_version',
      'return_alternates')),
    ('nova.scheduler.manager', 'SchedulerManager', '_get_all_host_states',
     ('context', 'spec_obj', 'provider_summaries')),
    ('nova.scheduler.manager', 'SchedulerManager',
     '_consume_selected_host', ('selected_host', 'spec_obj',
                                'instance_uuid')),
    ('nova.scheduler.manager', 'SchedulerManager', 'select_destinations',
     None),
    ('nova.scheduler.client.report', 'SchedulerReportClient',
     'claim_resources',
     ('context', 'consumer_uuid', 'alloc_request', 'project_id', 'user_id',
      'allocation_request_version', 'consumer_generation')),
    ('nova.scheduler.client.report', 'SchedulerReportClient',
     'get_allocation_candidates', ('context', 'resources')),
)


def scheduler_manager():
    """The scheduler manager ``opie-scheduler`` starts: OPIE's, or on a
    Nova this OPIE was not built for the safe mode's
    (:mod:`.safe_mode`), which is then said on standard error."""
    unsupported = problem()
    if unsupported:
        print('opie-scheduler: %s; starting in SAFE MODE: nothing is '
              'preempted' % unsupported, file=sys.stderr, flush=True)
        return SAFE_MODE_MANAGER
    return MANAGER


def release_problem(version=None):
    """Why the installed Nova's release (or ``version``) is not one this
    OPIE runs on, in one line, or None.  Reads no Nova module."""
    if version is None:
        try:
            version = importlib.metadata.version('nova')
        except importlib.metadata.PackageNotFoundError:
            return 'Nova is not installed in this Python environment'
    if version.split('.')[0] != str(SUPPORTED_MAJOR):
        return ('Nova %s is not supported: this OPIE runs on %s'
                % (version, SUPPORTED))
    return None


def problem(version=None):
    """:func:`release_problem`, then whether every method OPIE hooks
    still has the signature it was built for; one line, or None."""
    found = release_problem(version)
    if found:
        return found
    version = version or importlib.metadata.version('nova')
    for module, cls, method, params in HOOKS:
        found = _signature(module, cls, method)
        if found is None:
            return ('Nova %s has no %s.%s.%s, which OPIE overrides'
                    % (version, module, cls, method))
        names = tuple(p.name for p in found)
        if params is not None and (names[:len(params)] != params
                                   or _required(found[len(params):])):
            return ('Nova %s changed %s.%s(%s), which OPIE overrides'
                    % (version, cls, method, ', '.join(names)))
    return None


def _required(parameters):
    """Whether any of ``parameters`` must be given: one added with a
    default (or ``*args``, ``**kwargs``) changes no call OPIE makes."""
    return any(p.default is p.empty
               and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in parameters)


def _signature(module, cls, method):
    try:
        target = getattr(getattr(importlib.import_module(module), cls),
                         method)
    except (ImportError, AttributeError):
        return None
    return tuple(p for p in inspect.signature(target).parameters.values()
                 if p.name != 'self')
