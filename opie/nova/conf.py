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

"""The ``[opie]`` group of nova.conf.

Registered on Nova's global ``CONF`` when this module is imported (every
OPIE scheduler module imports it), and listed for oslo-config-generator
through the ``oslo.config.opts`` entry point ``opie``::

    oslo-config-generator --config-file etc/opie/opie-config-generator.conf

:func:`load_settings` turns the options into validated objects once, so a
bad value stops ``opie-scheduler`` with a one-line message instead of
failing the first scheduling request. Every option declares what it
accepts (a type, a range, choices), because oslo.config loads whatever
parses: a negative weigher multiplier silently inverts OPIE's policy, a
NaN one makes every host weigh NaN, a negative interval reads as "off".
Floats use :class:`FiniteFloat`: oslo.config's range checks let NaN and
infinities through, as every comparison with NaN is false.
"""
import dataclasses
import importlib.util
import math
import os

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_config import types

from opie import oneline
from opie.core import costs
from opie.core import flavor_spec
from opie.core import scheduling

GROUP_NAME = 'opie'
DELETE = 'delete'
SHELVE = 'shelve'
MOVE_OPERATIONS = ('resize', 'migrate', 'live-migrate', 'evacuate',
                   'unshelve')
# The conductor checks a live migration's destination after the scheduler
# has chosen it, and may reject it when its victims are already gone.
NEVER_PREEMPT_ON = frozenset(['live-migrate'])
RESTORE_SERVICE = ['evacuate', 'unshelve']
# Where packaged Nova keeps its state: Debian's, Ubuntu's and RDO's
# nova.conf, and Kolla's, set [DEFAULT] state_path = /var/lib/nova.
PACKAGED_STATE_PATH = '/var/lib/nova'
# The longest period, interval or grace OPIE accepts: beyond it a time
# computation overflows, and no deployment means it.
ONE_YEAR = 365 * 24 * 3600
# Nova's limits of a server tag (nova.objects.tag and the API's schema):
# OPIE tags its victims as an owner would, so it keeps to them.
TAG_MAX_LENGTH = 60
TAG_PATTERN = '^[^,/]*$'


def _nova_pybasedir():
    """Nova's default ``pybasedir`` (and so ``state_path``): the
    site-packages Nova is installed in, found without importing Nova
    ('' if it is not installed)."""
    spec = importlib.util.find_spec('nova')
    if spec is None or not spec.origin:
        return ''
    return os.path.dirname(os.path.dirname(os.path.abspath(spec.origin)))


class StatePath(types.String):
    """A path under ``$state_path``, moved to :data:`PACKAGED_STATE_PATH`
    when ``[DEFAULT] state_path`` is left at Nova's default, the Python
    install (``$pybasedir``): no packaged deployment keeps state in
    site-packages, nor lets the nova user write there. Applied to the
    default and to values from files alike, so ``opie-scheduler`` and
    ``opie-manage audit`` resolve the same path."""

    def __call__(self, value):
        value = super().__call__(value)
        if not value:
            return value
        path = os.path.abspath(value)
        base = _nova_pybasedir()
        if base and os.path.commonpath([base, path]) == base:
            return os.path.join(PACKAGED_STATE_PATH,
                                os.path.relpath(path, base))
        if os.path.dirname(path) == os.sep:
            # state_path = '' (no Nova here to give a default).
            return os.path.join(PACKAGED_STATE_PATH, value.lstrip(os.sep))
        return value


class FiniteFloat(types.Float):
    """A float within ``min`` and ``max`` that is neither NaN nor
    infinite."""

    def __call__(self, value):
        number = super().__call__(value)
        if number is not None and not math.isfinite(number):
            raise ValueError('%s is not a finite number' % number)
        return number


opie_group = cfg.OptGroup(
    GROUP_NAME,
    title='OPIE preemptible instances',
    help="""
Options of the OPIE scheduler plugin: which preemptible instances a normal
request may terminate, how they are chosen and terminated, and the
reconciler. The filter and weighers read them under any nova-scheduler; the
rest needs the ``opie-scheduler`` binary.
""")

opie_opts = [
    cfg.StrOpt(
        'costs',
        default='period',
        help="""
Cost plugins that price the preemption of an instance, with multipliers.

A comma-separated list of ``name=multiplier`` (the multiplier defaults to
1; it must be a finite number above 0, and each plugin is named once: a
plugin that should not count is left out). Victims are the cheapest set of
preemptible instances that frees enough room; a host is ranked by the cost
of that set. Plugins are stevedore extensions in the ``opie.costs``
namespace; OPIE ships ``period`` (run time modulo the billing period, the
paper's Algorithm 4), ``count`` (number of victims), ``age`` (run time)
and ``leftover`` (room freed beyond the need).

Example: ``period=1.0,count=60`` adds a minute per victim to the partial
billing period lost.
"""),
    cfg.IntOpt(
        'billing_period',
        default=3600,
        max=ONE_YEAR,
        min=1,
        help="""
Billing period in seconds, used by the ``period`` cost plugin: a provider
that charges whole periods loses the partial period of an instance it
kills.
"""),
    cfg.StrOpt(
        'ranking',
        default=scheduling.VICTIMS,
        choices=[
            (scheduling.VICTIMS, 'Rank hosts by the cost of the cheapest '
             'victim set that makes room (0 when the request fits).'),
            (scheduling.ALL_PREEMPTIBLES, 'Rank hosts by the cost of all '
             'their preemptible instances: the paper\'s literal Algorithm '
             '4; it picks the wrong host in the paper\'s Tables 5 and 6.'),
        ],
        help='How the preemption cost weigher scores a host.'),
    cfg.IntOpt(
        'max_victims',
        default=0,
        min=0,
        help="""
Most preemptible instances one request (all servers of a multi-create
together) may terminate. 0 means no limit. A host that needs more victims
is filtered out. The reconciler's repair of an overcommit takes as many as
the overcommit needs.
"""),
    cfg.ListOpt(
        'preempt_on_move',
        default=RESTORE_SERVICE,
        item_type=types.String(choices=MOVE_OPERATIONS),
        help="""
Move operations that may terminate preemptible instances on their
destination, from: %s. New servers always may; a rebuild never does.
Operations not listed only go to hosts with enough free room, counting
preemptible instances.

The default, evacuate and unshelve, lets a normal server come back into
service on a cloud full of preemptible instances. resize and migrate may be
added: their victims are lost if the destination compute then fails the
move. live-migrate is refused: the conductor checks its destination only
after the scheduler has chosen it (and its victims).
""" % ', '.join(MOVE_OPERATIONS)),
    cfg.StrOpt(
        'termination_mode',
        default=DELETE,
        choices=[
            (DELETE, 'Delete victims.'),
            (SHELVE, 'Shelve victims (their owners can unshelve them '
             'later). Shelving snapshots to Glance as a service user: '
             'the credentials of [service_user] (which Nova already uses '
             'for its service tokens), else the keystone auth options of '
             'this group; set [DEFAULT] shelved_offload_time = 0 on every '
             'compute so the room is freed at once.'),
        ],
        help='What happens to a preempted instance.'),
    cfg.Opt(
        'preempted_tag',
        type=types.String(max_length=TAG_MAX_LENGTH, regex=TAG_PATTERN),
        default='opie-preempted',
        help="""
Tag added to a server shelved by preemption (shelve mode), so its owner can
find it. Deleted servers lose their tags; their owner reads the
``opie-preempt`` instance action instead (API microversion 2.21 or later).
A tag as Nova's API allows it: at most %d characters, no "," or "/", and
not empty in shelve mode.
""" % TAG_MAX_LENGTH),
    cfg.ListOpt(
        'notification_topics',
        default=['notifications'],
        help="""
Legacy oslo.messaging topics that also get OPIE's versioned notifications
(``opie.preempt.end``, ``opie.preempt.error``) when [notifications]
notification_format is ``unversioned`` or ``both``. With ``versioned`` or
``both`` they go to [notifications] versioned_notifications_topics, beside
Nova's. The driver and transport are those of
[oslo_messaging_notifications].
"""),
    cfg.Opt(
        'overcommit_weight_multiplier',
        type=FiniteFloat(min=0),
        default=1000.0,
        help="""
Multiplier of the overcommit weigher (paper Algorithm 3): hosts where the
request fits without preemption get this much more weight than hosts where
it does not. Keep it above the sum of the other weighers' multipliers so
that a free host always wins over a preemption. Overridable per aggregate
with the ``opie_overcommit_weight_multiplier`` metadata key.

A finite number, 0 or more: a negative one would rank hosts that must
preempt above empty ones, so OPIE would preempt while a host is free. 0
turns the weigher off (``opie-manage audit`` reports it).
"""),
    cfg.Opt(
        'preemption_cost_weight_multiplier',
        type=FiniteFloat(min=0),
        default=100.0,
        help="""
Multiplier of the preemption cost weigher, which prefers hosts where the
cheapest sufficient victim set costs least. Weights are normalised over the
candidate hosts, so the cheapest host gets this multiplier and the dearest
none; keep it above the in-tree weighers' multipliers so they only break
near-ties. Overridable per aggregate with the
``opie_preemption_cost_weight_multiplier`` metadata key.

A finite number, 0 or more: a negative one would prefer the host where
preemption costs most. 0 leaves the choice among hosts that must preempt
to the other weighers.
"""),
    cfg.IntOpt(
        'reconcile_interval',
        default=60,
        max=ONE_YEAR,
        min=0,
        help="""
Seconds between runs of the reconciler, which terminates preemptible
instances on hosts where everything together (h_f) exceeds capacity, as
when a preemptible and a normal request were placed at once by different
scheduler workers, and claimed victims left running (see
``claimed_grace_period``). Only the first scheduler host (by name) that is
up runs it. 0 disables it.
"""),
    cfg.IntOpt(
        'reconcile_grace_period',
        default=120,
        max=ONE_YEAR,
        min=0,
        help="""
Seconds a host must stay over capacity before the reconciler acts, so that
a preemption already under way can finish.
"""),
    cfg.IntOpt(
        'claimed_grace_period',
        default=30,
        max=ONE_YEAR,
        min=0,
        help="""
Seconds a claimed victim may keep running before the reconciler terminates
it. A victim's Placement allocations are emptied when a scheduler worker
claims it, and the worker terminates it in the background right after
answering the request; a preemptible instance that keeps running without
allocations for longer than this (its scheduler died, or Placement lost its
allocations) is unaccounted for, so the reconciler deletes or shelves it.
Keep it above the time a termination takes under load.
"""),
    cfg.IntOpt(
        'interruption_rates_interval',
        default=3600,
        max=ONE_YEAR,
        min=0,
        help="""
Seconds between two computations of each preemptible flavor's interruption
rates (preemptions per server-day over the last day and the last week),
which the reconciler's lease holder publishes as the flavor's extra specs
``opie:interruptions_per_server_day_1d``, ``..._7d`` and
``opie:interruptions_updated_at`` for tenants to read with ``openstack
flavor show``. A computation reads, in each cell, the rows of the
servers of preemptible flavors that existed in the last week and their
``opie-preempt`` actions (three queries per cell), and writes a flavor's
extra specs only when a rate changed. Checked at each reconcile pass, so
it is at least ``reconcile_interval``; 0 stops publishing (the rates
already published stay as they are).
"""),
    cfg.BoolOpt(
        'freeze_after_warm_up',
        default=True,
        help="""
After each warm-up of a scheduler worker's instance cache (before it serves,
then every 5 minutes, with Nova's periodic tasks), collect its garbage in
full and move everything it then holds (the instance cache, Nova's host
states) out of reach of Python's automatic collections (``gc.freeze``),
having first taken back everything frozen (``gc.unfreeze``): what the
previous warm-up froze. Its full collections in requests then scan only
what is younger than the last warm-up, not every preemptible instance it
keeps (20,000 at 1000 nodes of 20). The price: one full collection per
warm-up; garbage cycles among objects older than the last warm-up are
collected at the next one, not sooner (never, if ``[DEFAULT]
periodic_enable`` is False); and tools that list objects through the
collector (oslo.reports' green thread list) miss the frozen ones. A worker
whose process had objects frozen before its first warm-up (oslo.service's
eventlet launcher freezes them before forking workers, so that their
memory stays shared) leaves them so and freezes nothing. False: each
warm-up still collects the garbage in full, and freezes nothing.
"""),
    cfg.IntOpt(
        'heartbeat_interval',
        default=30,
        max=ONE_YEAR,
        min=1,
        help='Seconds between two writes of the heartbeat file.'),
    cfg.Opt(
        'heartbeat_path',
        type=StatePath(),
        default='$state_path/opie-scheduler.heartbeat',
        help="""
File the OPIE scheduler rewrites every ``heartbeat_interval`` seconds
(JSON: host, pid, time, interval, version, settings), so an audit can tell
that the OPIE manager, not the stock one, is running. The beat written at
start gives as its interval the larger of ``heartbeat_interval`` and
``[DEFAULT] periodic_fuzzy_delay``: Nova's first periodic tasks run up to
that delay after start. When ``[DEFAULT] state_path``
is left at Nova's default (the Python install), the file goes to
/var/lib/nova/ instead, as packaged Nova's state does.
"""),
    cfg.Opt(
        'metrics_dir',
        type=StatePath(),
        help="""
Directory where every scheduler worker writes its Prometheus metrics, one
file ``opie-scheduler.<host>.<worker>.prom`` each (``<worker>``: a slot the
worker started in its place takes again), every ``heartbeat_interval``
seconds and after each preemption: point node_exporter's textfile collector
at it (``--collector.textfile.directory``). Unset, no metrics are written.
A ``$state_path`` value moves to /var/lib/nova/ as ``heartbeat_path``
does.
"""),
]

# The terms preemptible flavors promise their servers (opie:tier and
# opie:minimum_uptime: opie.core.flavor_spec), where a flavor sets none.
terms_opts = [
    cfg.IntOpt(
        'minimum_uptime',
        default=0,
        max=flavor_spec.MAX_MINIMUM_UPTIME,
        min=0,
        help="""
Seconds a preemptible server runs before it may be a victim, for the
preemptible flavors that do not set their own ``opie:minimum_uptime`` extra
spec (``opie-manage flavor set-terms FLAVOR --minimum-uptime SECONDS``).

A preemptible server younger than its minimum uptime is never a victim of a
request: a normal request that only such servers could make room for fails,
and its fault says so (the reconciler's repair of a host over capacity
takes one only where no older server can make room). 0 (the default)
promises nothing. Nova copies the flavor
into each server when it boots, so a server keeps the terms it was booted
with until it is resized; this option, read when the scheduler starts,
applies to every server of a flavor without its own value, old or new.
Flavors have no default tier: a flavor without ``opie:tier`` is tier 0,
preempted first.
"""),
    cfg.IntOpt(
        'preemption_notice',
        default=0,
        max=flavor_spec.MAX_NOTICE,
        min=0,
        help="""
Seconds of notice a victim gets before it is stopped, for the preemptible
flavors that do not set their own ``opie:notice`` extra spec
(``opie-manage flavor set-terms FLAVOR --notice SECONDS``).

With notice, a victim is told first (server metadata ``opie:preempt_at``,
which its guest reads from Nova's metadata service; an ``opie_notice``
event on its ``opie-preempt`` instance action; the notification
``opie.preempt.start``), stopped with a clean shutdown when the notice ends
(Nova's stop: ACPI power button, then a hard power-off after the compute's
``[DEFAULT] shutdown_timeout``), and only then deleted or shelved. The
server that displaced it is held meanwhile: its room is already its own in
Placement, and its build starts only once its victims have stopped, so it
waits the notice. Keep Nova API's ``[api] metadata_cache_expiration`` well
below the notice, or guests read the notice late. 0 (the default):
victims are terminated at once, without a clean shutdown.
"""),
    cfg.IntOpt(
        'maximum_lifetime',
        default=0,
        max=flavor_spec.MAX_MAXIMUM_LIFETIME,
        min=0,
        help="""
Seconds a preemptible server may exist before OPIE ends it, for the
preemptible flavors that do not set their own ``opie:maximum_lifetime`` extra
spec (``opie-manage flavor set-terms FLAVOR --maximum-lifetime SECONDS``).

The scheduler process that holds the reconciler's lease ends, at each of its
passes (``reconcile_interval``), the preemptible servers older than their
maximum lifetime, counted from their creation (or from their last unshelve):
with the notice of their flavor first (see ``preemption_notice``), then a clean
shutdown, then deleted or shelved as ``termination_mode`` says, and recorded
like a preemption (the ``opie-preempt`` instance action, the notification
``opie.preempt.end`` with reason ``lifetime``). A server is never ended before
its minimum uptime. 0 (the default): servers live as long as their owners
keep them. Applies to every server of a flavor without its own value, old or
new: setting it ends, within a pass or two, every preemptible server of such a
flavor that is older already.
"""),
]


# Preemption budgets (:mod:`~opie.nova.request.ledger`): how much of each
# project's running
# time preemptions may take in a rolling window.
budget_opts = [
    cfg.Opt(
        'preemption_budget_vcpu_hours',
        # Placement holds at most 2^31 - 1 units (vCPU-minutes).
        type=FiniteFloat(min=0, max=(2 ** 31 - 1) // 60),
        help="""
Default preemption budget of a project: the most preempted vCPU-hours its
preemptible servers may lose in any ``preemption_budget_window``. A
preemption charges each victim's vCPUs times its run time (at most one
window), in whole vCPU-minutes; a normal request never takes a set of
victims whose charges exceed what their projects have left, and fails
saying so when only such a set would make room. ``opie-manage budget set``
overrides it for one project.

Unset (the default): projects without a budget of their own have none and
are never charged. 0: their servers are never preempted. Counted in
vCPU-minutes, rounded to the nearest. The scheduler writes it into a
project's ledger in Placement when it first charges the project; the
reconciler's lease holder brings the ledgers that follow it to a new value
at its next pass.
"""),
    cfg.IntOpt(
        'preemption_budget_window',
        default=86400,
        max=ONE_YEAR,
        min=60,
        help="""
Seconds of the rolling window of the preemption budgets: a charge counts
against its project's budget for this long after the preemption (the
reconciler's lease holder removes it at its first pass after that), and a
victim is charged for at most this much of its run time.
"""),
]
opie_opts += budget_opts


def register_opts(conf):
    conf.register_group(opie_group)
    conf.register_opts(opie_opts, group=opie_group)
    conf.register_opts(terms_opts, group=opie_group)
    ks_loading.register_session_conf_options(conf, GROUP_NAME)
    ks_loading.register_auth_conf_options(conf, GROUP_NAME)


def list_opts():
    """Options for oslo-config-generator (entry point ``opie``)."""
    return [(opie_group,
             opie_opts
             + terms_opts
             + ks_loading.get_session_conf_options()
             + ks_loading.get_auth_common_conf_options()
             + ks_loading.get_auth_plugin_conf_options('password')
             + ks_loading.get_auth_plugin_conf_options('v3password'))]


class ConfigError(ValueError):
    """An ``[opie]`` option has a value OPIE cannot use."""


@dataclasses.dataclass(frozen=True)
class Settings:
    """The ``[opie]`` options, validated and turned into objects."""
    cost_model: costs.CostModel
    ranking: str
    max_victims: int | None
    preempt_on_move: frozenset
    termination_mode: str
    preempted_tag: str
    # Preemption budgets: the default in vCPU-minutes (None: no default)
    # and the window in seconds.
    budget_minutes: int | None = None
    budget_window: int = 86400


def allowed(opt):
    """What ``opt`` accepts, in words: ``an integer >= 0``."""
    kind = opt.type
    if isinstance(kind, types.List):
        return 'a comma-separated list of %s' % allowed(
            cfg.Opt(opt.dest, type=kind.item_type))
    if getattr(kind, 'choices', None):
        return 'one of %s' % ', '.join(map(str, kind.choices))
    if isinstance(kind, types.Boolean):
        return 'true or false'
    if isinstance(kind, types.Number):
        what = ('an integer' if isinstance(kind, types.Integer)
                else 'a finite number')
        number = '%d' if isinstance(kind, types.Integer) else '%g'
        bounds = [(' %s ' + number) % (sign, bound) for sign, bound
                  in (('>=', kind.min), ('<=', kind.max))
                  if bound is not None]
        return what + ' and'.join(bounds)
    if isinstance(kind, types.String) and kind.max_length:
        return 'text of at most %d characters%s' % (
            kind.max_length,
            ' matching %s' % kind.regex.pattern if kind.regex else '')
    return kind.type_name


def _invalid(opt, exc):
    """The one line naming an option oslo.config refused, and why."""
    # oslo.config names the file by an internal location object; keep
    # only the reason.
    reason = str(exc).rpartition('is not valid: ')[2]
    return oneline.escape('[%s] %s is not valid: %s (allowed: %s)' % (
        GROUP_NAME, opt.dest, reason, allowed(opt)))


def _read_all(conf):
    """The ``[opie]`` group, each of OPIE's options read once, so that a
    value out of its range stops the caller now, not a request later."""
    group = conf[GROUP_NAME]
    for opt in opie_opts + terms_opts:
        try:
            getattr(group, opt.dest)
        except cfg.Error as exc:
            raise ConfigError(_invalid(opt, exc)) from None
    return group


def vcpu_minutes(vcpu_hours):
    """A budget of ``vcpu_hours`` in whole vCPU-minutes, the unit charged
    (None stays None: no budget)."""
    if vcpu_hours is None:
        return None
    return round(vcpu_hours * 60)


def load_settings(conf):
    """Validate ``conf.opie``; raise :class:`ConfigError` naming the option.
    """
    group = _read_all(conf)
    spec, period = group.costs, group.billing_period
    settings = dict(
        ranking=group.ranking,
        max_victims=group.max_victims or None,
        preempt_on_move=frozenset(group.preempt_on_move),
        termination_mode=group.termination_mode,
        preempted_tag=group.preempted_tag,
        budget_minutes=vcpu_minutes(group.preemption_budget_vcpu_hours),
        budget_window=group.preemption_budget_window)
    try:
        cost_model = costs.load_cost_model(spec, period)
    except ValueError as exc:
        raise ConfigError(oneline.escape(
            '[opie] costs = %s: %s' % (spec, exc))) from None
    settings = Settings(cost_model=cost_model, **settings)
    refused = settings.preempt_on_move & NEVER_PREEMPT_ON
    if refused:
        raise ConfigError('[opie] preempt_on_move: %s cannot preempt: the '
                          'conductor checks its destination after the '
                          'scheduler chose it and its victims'
                          % ', '.join(sorted(refused)))
    if settings.termination_mode == SHELVE and not settings.preempted_tag:
        raise ConfigError('[opie] preempted_tag must not be empty in shelve '
                          'mode')
    return settings


# Nova's own group for service-to-service credentials.
SERVICE_USER = 'service_user'


def service_auth_group(conf):
    """The group whose keystone credentials the scheduler acts with as a
    service user: Nova's ``[service_user]`` when it names an auth type,
    else ``[opie]`` when it does, else None."""
    for group in (SERVICE_USER, GROUP_NAME):
        try:
            if conf[group].auth_type:
                return group
        except (cfg.NoSuchOptError, KeyError):
            continue
    return None


def load_service_auth(conf, termination_mode=DELETE):
    """In shelve mode, ``(group, keystone auth plugin)`` of
    :func:`service_auth_group` (a shelve snapshot is uploaded to Glance
    with the token of the context that asked for it); None in delete
    mode, which acts with an admin context."""
    if termination_mode != SHELVE:
        return None
    group = service_auth_group(conf)
    if group is None:
        raise ConfigError(
            '[opie] termination_mode = shelve needs service credentials '
            'to snapshot victims to Glance: configure [service_user] (as '
            'for Nova\'s service tokens) or the keystone auth options of '
            '[opie]')
    try:
        return group, ks_loading.load_auth_from_conf_options(conf, group)
    except ks_exceptions.ClientException as exc:
        raise ConfigError('[%s] keystone auth options: %s'
                          % (group, exc)) from None


register_opts(cfg.CONF)
