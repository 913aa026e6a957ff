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

"""A Nova compute host as OPIE's core sees it: h_f, h_n and preemptibles.

Preemptible flavors (``opie:preemptible=true``) zero the standard resource
classes and request ``CUSTOM_PREEMPTIBLE_VCPU``, ``_MEMORY_MB`` and
``_DISK_GB`` instead, so in Placement's provider summary of a compute node:

* standard capacity is the host's schedulable capacity,
* standard usage is h_n (normal instances only),
* standard plus custom usage is h_f (everything).

Summaries are current to the last claim of any scheduler worker. Where a
host has none (a rebuild, or the stock scheduler calling OPIE's filter) its
HostState stands in: the compute's resource tracker counts every instance,
so it is h_f.

Preemptible instances themselves are needed only for hosts that may have
to give some up. The scheduler process keeps them between requests
(:mod:`.instance_cache`); a request reads, with one database query per
cell, what changed since the last one, and the hosts no request needed
before; a scheduler worker reads them all before it serves (:func:`warm`).

A victim taken by any scheduler worker (:mod:`.claim`) holds no
allocations until it is terminated, which happens in the background: it is
still listed, but its room is free and it is no candidate. Which instances
may be victims at all: :func:`opie.core.preemptible.may_be_victim`. Each
carries its project and its flavor's terms (tier, minimum uptime:
:func:`~opie.nova.flavor_check.terms`), read from the copy of the flavor Nova
keeps
in the instance: a flavor's terms changed later bind the servers booted
after, not those already running. Where the
instances listed on a host exceed what Placement counts there, the host's
allocations are read (one request) and such instances are left out.
"""
import collections
import copy
import dataclasses
import datetime
import urllib.parse

from nova.compute import utils as compute_utils
from nova import context as nova_context
from nova import objects
from nova.scheduler import utils as scheduler_utils

from opie.core import host as core_host
from opie.core import preemptible
from opie.core import resources as res
from opie.core import scheduling
from opie.nova import flavor_check
from opie.nova.request import cas
from opie.nova.request import claim


def is_preemptible(flavor):
    # Marked is not enough: a flavor that breaks the contract would be
    # counted twice (see the module).
    return flavor_check.is_preemptible(flavor)


# Instances share a handful of flavors, and Nova builds a RequestSpec to
# work out what a flavor asks of Placement: do it once per flavor.
_RESOURCES_CACHE = {}
_CACHE_LIMIT = 1024


def _flavor_key(flavor, is_bfv):
    return (flavor.vcpus, flavor.memory_mb, flavor.root_gb,
            flavor.ephemeral_gb, flavor.swap,
            tuple(sorted(flavor.extra_specs.items())), bool(is_bfv))


def flavor_resources(flavor, is_bfv=False):
    """What Placement charges for ``flavor``, standard and custom summed."""
    key = _flavor_key(flavor, is_bfv)
    found = _RESOURCES_CACHE.get(key)
    if found is None:
        found = summed(scheduler_utils.resources_from_flavor_and_bfv(
            flavor, is_bfv))
        if len(_RESOURCES_CACHE) >= _CACHE_LIMIT:
            _RESOURCES_CACHE.clear()
        _RESOURCES_CACHE[key] = found
    return found


def summed(amounts):
    """Resources from Placement ``amounts`` (class -> amount), standard
    and custom classes summed: h_f's view."""
    return res.Resources(*(amounts.get(std, 0) + amounts.get(custom, 0)
                           for std, custom in zip(preemptible.STANDARD,
                                                  preemptible.CUSTOM)))


def holds(claimed, record, resources):
    """Does a victim's allocation (a :class:`.claim.Claim`) hold at
    least ``resources`` on ``record``'s compute node? Only then does
    emptying it free them there (a victim being resized holds its room
    elsewhere)."""
    held = claimed.allocations.get(record.uuid, {}).get('resources', {})
    return summed(held).covers(resources)


def any_fits(summaries, amounts):
    """Does a request of Placement ``amounts`` fit h_f on any compute
    node of the provider ``summaries``?"""
    need = summed(amounts)
    for summary in summaries.values():
        resources = summary.get('resources', {})
        if not all(rc in resources for rc in preemptible.STANDARD):
            continue
        capacity = res.Resources(*(resources[rc]['capacity']
                                   for rc in preemptible.STANDARD))
        used = summed({rc: r['used'] for rc, r in resources.items()})
        if (capacity - used).covers(need):
            return True
    return False


def first_candidates(found, limit):
    """Nova's ``(allocation requests, provider summaries, version)`` cut
    as Placement cuts an answer at ``limit``: the first requests (a random
    sample when Placement randomises: so is any part of one), and the
    summaries of the provider trees they use."""
    requests, summaries, version = found
    requests = requests[:limit]
    roots = {summaries[rp].get('root_provider_uuid', rp)
             for request in requests for rp in request['allocations']
             if rp in summaries}
    kept = {rp: summary for rp, summary in summaries.items()
            if summary.get('root_provider_uuid', rp) in roots}
    return requests, kept, version


def fit_probe(resources, summaries):
    """A copy of Nova's ResourceRequest ``resources`` asking for the
    request's h_f need (standard and preemptible amounts summed) in both
    the standard and the preemptible classes, the class fewest providers
    of the cut answer's ``summaries`` have room in first (:class:`Probe`),
    or None when the request has numbered or named groups (the need
    could not be put in one group)."""
    if resources.get_num_of_suffixed_groups():
        return None
    probe = copy.deepcopy(resources)
    # Nova's request, every limit, trait and aggregate of it, but the
    # order of its classes.
    probe.__class__ = Probe
    group = probe.get_request_group(None)
    need = summed(group.resources)
    for std, custom, amount in zip(preemptible.STANDARD, preemptible.CUSTOM,
                                   need):
        group.resources.pop(std, None)
        group.resources.pop(custom, None)
        if amount:
            group.resources[std] = amount
            group.resources[custom] = amount
    # Ties by name.
    probe.order = sorted(group.resources, key=lambda rc: (sum(
        _has_room(summary, rc, group.resources[rc])
        for summary in summaries.values()), rc))
    return probe


class Probe(scheduler_utils.ResourceRequest):
    """Nova's ResourceRequest of a probe (:func:`fit_probe`): one group,
    its classes asked in the order most likely to end Placement's search
    at the first.

    Placement looks for providers one class at a time, in the order the
    query names them, each look a sum over every allocation of that class
    (``RequestGroupSearchContext``), and stops at the first class no
    provider has room in. Nova names them in alphabetical order, so on a
    cloud full of preemptibles the probe summed the preemptible disk,
    where room is left, before the memory or vCPUs, where none is: up to
    three sums over every preemptible's allocations where one is enough.
    The order changes what Placement does, not which candidates there
    are."""

    # The classes, in the order to ask for them.
    order = ()

    def to_querystring(self):
        # A class not ranked keeps Nova's place after those that are
        # (sorted is stable).
        rank = {rc: i for i, rc in enumerate(self.order)}
        params = []
        for key, value in urllib.parse.parse_qsl(super().to_querystring(),
                                                 keep_blank_values=True):
            if key == 'resources' and value:
                value = ','.join(sorted(
                    value.split(','), key=lambda amount: rank.get(
                        amount.partition(':')[0], len(rank))))
            params.append((key, value))
        return urllib.parse.urlencode(params)


def _has_room(summary, rc, amount):
    """Does Placement see ``amount`` of ``rc`` free on the provider of
    ``summary``, as it checks one class?"""
    found = summary.get('resources', {}).get(rc, {})
    return found.get('capacity', 0) - found.get('used', 0) >= amount


def request_of(spec_obj):
    """The core Request of a RequestSpec."""
    is_bfv = 'is_bfv' in spec_obj and spec_obj.is_bfv
    return scheduling.Request(flavor_resources(spec_obj.flavor, is_bfv),
                              is_preemptible(spec_obj.flavor))


def core_instance(instance):
    """A Nova Instance (flavor loaded) as a core Instance, on the terms
    of its flavor as Nova copied it into the instance: those it was
    booted (or last resized) with."""
    terms = flavor_check.terms(instance.flavor)
    return core_host.Instance(
        uuid=instance.uuid,
        resources=flavor_resources(instance.flavor),
        preemptible=is_preemptible(instance.flavor),
        launched_at=instance.launched_at or instance.created_at,
        eligible=preemptible.may_be_victim(
            instance.locked_by if instance.locked else None,
            instance.task_state, instance.vm_state),
        task_state=instance.task_state,
        project_id=instance.project_id or '',
        tier=terms.tier,
        minimum_uptime=terms.minimum_uptime,
        created_at=instance.created_at,
        notice=terms.notice)


UNKNOWN = object()


@dataclasses.dataclass
class HostRecord:
    """One candidate host during one scheduling request.

    ``normal_used`` and ``preemptible_used`` start from Placement and follow
    what the request does (placements add, claimed victims subtract).
    ``preemptibles``, the host's eligible preemptible instances, is None
    until loaded.
    """
    uuid: str
    host: str
    nodename: str
    cell_uuid: str
    capacity: res.Resources
    normal_used: res.Resources
    preemptible_used: res.Resources = res.ZERO
    preemptibles: list | None = None
    # The host token's generation this record's usage is current to
    # (:mod:`.cas`); UNKNOWN until known, and after a refused write.
    generation: object = UNKNOWN
    # Has the compute node the token's inventory? None where no summary
    # tells (a rebuild, which writes nothing).
    token_inventory: bool | None = None

    def core_host(self):
        """The core Host; unknown preemptibles count as used room."""
        preemptibles = tuple(self.preemptibles or ())
        listed = res.total(i.resources for i in preemptibles)
        # Placement may count more than the instances listed (placements
        # of this request, ineligible instances): that part occupies h_f
        # but cannot be preempted.
        unlisted = listed.shortfall(self.preemptible_used)
        return core_host.Host(self.host, self.capacity,
                              self.normal_used + unlisted, preemptibles,
                              listed=listed)

    def free_full(self):
        """h_f free room (what core_host().free_full tells, cheaper)."""
        listed = res.total(i.resources for i in self.preemptibles or ())
        held = res.Resources(*(max(used, seen) for used, seen in
                               zip(self.preemptible_used, listed)))
        return self.capacity - self.normal_used - held

    def apply_usage(self, usages):
        """Reset usage from a Placement ``usages`` dict."""
        self.normal_used = _amounts(usages, preemptible.STANDARD)
        self.preemptible_used = _amounts(usages, preemptible.CUSTOM)


def _amounts(usages, classes):
    return res.Resources(*(usages.get(rc, 0) for rc in classes))


def record_from_summary(host_state, summary):
    """A HostRecord from a provider summary, or None if it lacks the
    standard classes (the HostState must stand in)."""
    resources = summary.get('resources', {})
    if not all(rc in resources for rc in preemptible.STANDARD):
        return None
    record = HostRecord(
        uuid=host_state.uuid, host=host_state.host,
        nodename=host_state.nodename, cell_uuid=host_state.cell_uuid,
        capacity=res.Resources(*(resources[rc]['capacity']
                                 for rc in preemptible.STANDARD)),
        normal_used=res.ZERO,
        token_inventory=preemptible.HOST_TOKEN in resources)
    record.apply_usage({rc: r['used'] for rc, r in resources.items()})
    return record


def record_from_placement(client, context, host_state, token=True):
    """A HostRecord of ``host_state``'s compute node as Placement counts it
    now (its inventories and usages, and its token's generation unless not
    ``token``)."""
    base = '/resource_providers/%s' % host_state.uuid
    inventories = claim.read(client, context,
                             base + '/inventories')['inventories']
    capacity = res.Resources(*(
        core_host.inventory_capacity(inventories.get(rc))
        for rc in preemptible.STANDARD))
    record = HostRecord(
        uuid=host_state.uuid, host=host_state.host,
        nodename=host_state.nodename, cell_uuid=host_state.cell_uuid,
        capacity=capacity, normal_used=res.ZERO,
        token_inventory=preemptible.HOST_TOKEN in inventories)
    if token:
        record.generation, usages = read_host(client, context, record.uuid)
    else:
        usages = read_usages(client, context, record.uuid)
    record.apply_usage(usages)
    return record


def over_capacity(client, context, provider_uuid):
    """Is the compute node over its capacity in h_f, as Placement counts
    it now (inventory x allocation ratio, usages)?"""
    record = record_from_placement(client, context, HostRecord(
        provider_uuid, '', '', '', res.ZERO, res.ZERO), token=False)
    return not record.free_full().covers(res.ZERO)


def placement_amounts(context, instance):
    """What Placement charges ``instance`` (with its flavor) on its
    compute node, class by class, as Nova's scheduler asks for it."""
    is_bfv = compute_utils.is_volume_backed_instance(context, instance)
    return {rc: amount for rc, amount in
            scheduler_utils.resources_from_flavor_and_bfv(
                instance.flavor, is_bfv).items() if amount}


def read_usages(client, context, provider_uuid):
    """Placement's ``usages`` dict of a resource provider."""
    return claim.read(client, context, '/resource_providers/%s/usages'
                      % provider_uuid)['usages']


def read_host(client, context, provider_uuid):
    """``(generation, usages)`` of a compute node now: its token's
    generation (:data:`.cas.ABSENT` if none) and Placement's ``usages``
    dict, both from one read of the node's allocations. Placement lists
    them, with each consumer's generation, in one query, so the usage is
    exactly the one of that generation: each write moving the token
    commits in one transaction, wholly in the answer or not at all.
    (Reading the token and then the usages took two requests for less: a
    usage at least as new as the generation. The answer's
    ``resource_provider_generation`` comes from another query, and is not
    used.)

    Allocations are counted through their consumers: an allocation
    without a consumer record, which only a database whose Placement
    online migrations were not run can hold (``placement-status upgrade
    check`` reports them), counts in Placement's usages and not here.
    Placement still refuses a write that would exceed the node's
    capacity."""
    url = '/resource_providers/%s/allocations' % provider_uuid
    body = claim.read(client, context, url, claim.VERSION)
    usages = collections.Counter()
    try:
        allocations = body['allocations']
        for held in allocations.values():
            for rc, amount in held['resources'].items():
                if isinstance(amount, bool) or not isinstance(amount, int):
                    raise TypeError(amount)
                usages[rc] += amount
        generation = cas.held_at(allocations, provider_uuid)
    except (AttributeError, KeyError, TypeError) as exc:
        raise claim.ClaimError('GET %s: an answer without allocations as '
                               'Placement lists them (%s: %s)'
                               % (url, type(exc).__name__, exc))
    if generation is not cas.ABSENT and not isinstance(generation, int):
        raise claim.ClaimError('GET %s: the host token\'s generation is '
                               '%r' % (url, generation))
    return generation, dict(usages)


def holders(client, context, provider_uuid):
    """Uuids of the consumers holding allocations on a resource provider."""
    return set(claim.read(client, context, '/resource_providers/%s/'
                          'allocations' % provider_uuid)['allocations'])


def record_from_host_state(host_state):
    """A HostRecord from a HostState: its usage is h_f, all of it normal
    as far as OPIE can tell without Placement."""
    capacity = res.Resources(
        host_state.vcpus_total * (host_state.cpu_allocation_ratio or 1.0),
        host_state.total_usable_ram_mb
        * (host_state.ram_allocation_ratio or 1.0),
        host_state.total_usable_disk_gb
        * (host_state.disk_allocation_ratio or 1.0))
    used = res.Resources(
        host_state.vcpus_used,
        host_state.total_usable_ram_mb - host_state.free_ram_mb,
        host_state.disk_mb_used / 1024.0)
    return HostRecord(uuid=host_state.uuid, host=host_state.host,
                      nodename=host_state.nodename,
                      cell_uuid=host_state.cell_uuid,
                      capacity=capacity, normal_used=used)


class InstanceLoader:
    """Loads the instances of many hosts with one query per cell, or
    through a scheduler process's :class:`~.instance_cache.InstanceCache`
    (one query per cell for what changed)."""

    def __init__(self, context, cells, placement_client, cache=None):
        self.context = context
        self.cells = cells          # cell uuid -> CellMapping
        self.placement_client = placement_client
        self.cache = cache

    def __call__(self, records, fresh=False):
        """Set ``preemptibles`` of every record (a list of HostRecords) to
        its candidates: eligible and not claimed; read from the database,
        not the cache, if ``fresh``."""
        for record, listed in self.load(records, fresh):
            self._drop_claimed(record, listed)

    def load(self, records, fresh=False, every=False):
        """Set ``preemptibles`` of every record to its eligible preemptible
        instances (``every`` one, eligible or not), claimed or not;
        (record, what all its preemptible instances take) for each."""
        listed = []
        by_cell = collections.defaultdict(list)
        for record in records:
            by_cell[record.cell_uuid].append(record)
        for cell_uuid, cell_records in by_cell.items():
            nodes = [(r.host, r.nodename) for r in cell_records]
            if self.cache is None:
                found = self._read_nodes(cell_uuid, nodes)
            else:
                found = self.cache.preemptibles(
                    self._read, cell_uuid, nodes, nodes if fresh else ())
            taken = {node: res.total(i.resources for i in found[node])
                     for node in nodes}
            if self.cache is not None and not fresh:
                self._read_unseen(cell_uuid, cell_records, nodes, found,
                                  taken)
            for record, node in zip(cell_records, nodes):
                # What Placement still counts for an ineligible one (being
                # deleted, say) stays in h_f through HostRecord.core_host.
                record.preemptibles = [i for i in found[node]
                                       if every or i.eligible]
                listed.append((record, taken[node]))
        return listed

    def _read_unseen(self, cell_uuid, records, nodes, found, taken):
        """Placement's usage is exact: where it counts more preemptible
        usage than the kept instances take, beyond what the node's last
        full read left unexplained, one arrived unseen (saved by a clock
        far behind, say): read such nodes in full (into ``found``, and
        what their instances take into ``taken``).

        What a full read leaves unexplained stays so legitimately (the
        source of a preemptible's resize left unconfirmed, held by its
        migration; a flavor OPIE counts as normal charged to the
        preemptible classes): it is remembered, so the node is not read
        again on every request, and forgotten as it shrinks."""
        unseen = []
        for record, node in zip(records, nodes):
            excess = taken[node].shortfall(record.preemptible_used)
            known = self.cache.unexplained(cell_uuid, node)
            if not known.covers(excess):
                unseen.append((record, node))
            elif excess != known:
                self.cache.explain(cell_uuid, node, excess)
        if not unseen:
            return
        found.update(self.cache.preemptibles(
            self._read, cell_uuid, [n for _, n in unseen],
            [n for _, n in unseen]))
        for record, node in unseen:
            taken[node] = res.total(i.resources for i in found[node])
            self.cache.explain(cell_uuid, node, taken[node].shortfall(
                record.preemptible_used))

    def _drop_claimed(self, record, listed):
        # Only instances holding nothing (claimed victims, and rows the
        # cache keeps of instances whose rows were archived) make the
        # listed exceed Placement's count; where they do not, such a one
        # among the listed is at worst chosen, found holding nothing when
        # its write is prepared, and the host read again (see the
        # manager's ClaimingClient).
        if record.preemptible_used.covers(listed):
            return
        held = holders(self.placement_client, self.context, record.uuid)
        record.preemptibles = [i for i in record.preemptibles
                               if i.uuid in held]

    def not_victims(self, record, uuids, now):
        """Those of ``uuids`` that the cell database, read now, says are no
        eligible preemptible instance on ``record``'s node, or one younger
        than its minimum uptime at ``now`` (launched again since the cache
        read it): the cache chooses victims, the database has the last
        word."""
        with self._cell(record.cell_uuid) as cctxt:
            found = _rows(cctxt, uuids)
        still = set()
        for row in found:
            if ((row.host, row.node) == (record.host, record.nodename)
                    and is_preemptible(row.flavor)):
                instance = core_instance(row)
                if instance.eligible and not instance.protected(now):
                    still.add(row.uuid)
        return set(uuids) - still

    def emptied_claims(self, record, uuids):
        """A :class:`.claim.Claim` for each of ``uuids`` the cell still
        has: what it would hold on ``record``'s node (its flavor, as Nova's
        scheduler asks Placement for it), to give it back."""
        with self._cell(record.cell_uuid) as cctxt:
            return [claim.Claim(i.uuid, {record.uuid: {
                'resources': placement_amounts(cctxt, i)}},
                i.project_id, i.user_id, None)
                for i in _rows(cctxt, uuids)]

    def _cell(self, cell_uuid):
        cell = self.cells.get(cell_uuid) or objects.CellMapping.get_by_uuid(
            self.context, cell_uuid)
        return nova_context.target_cell(self.context, cell)

    def _read_nodes(self, cell_uuid, nodes):
        found = {node: [] for node in nodes}
        for host, node, _, _, instance, _ in self._read(
                cell_uuid, hosts=sorted({host for host, _ in nodes})):
            if instance is not None and (host, node) in found:
                found[(host, node)].append(instance)
        return found

    def _read(self, cell_uuid, hosts=None, since=None):
        """The cell's instances on ``hosts``, or changed since ``since``
        (deleted ones too), as (host, node, uuid, deleted, core Instance
        or None when not preemptible, when the row was last saved)."""
        with self._cell(cell_uuid) as cctxt:
            if since is None:
                found = objects.InstanceList.get_by_filters(
                    cctxt, {'host': hosts, 'deleted': False},
                    expected_attrs=['flavor'])
            else:
                found = objects.InstanceList.get_by_filters(
                    cctxt.elevated(read_deleted='yes'),
                    {'changes-since': since}, expected_attrs=['flavor'])
        return [(i.host, i.node, i.uuid, i.deleted,
                 None if i.deleted or not is_preemptible(i.flavor)
                 else core_instance(i),
                 _naive_utc(i.updated_at or i.created_at))
                for i in found]


def warm(context, cells, cache):
    """Read into ``cache`` the preemptible instances of every compute
    node of ``cells`` (cell uuid -> CellMapping), cell by cell
    (:meth:`.instance_cache.InstanceCache.warm`)."""
    loader = InstanceLoader(context, cells, None, cache)
    for cell_uuid, cell in cells.items():
        with nova_context.target_cell(context, cell) as cctxt:
            nodes = [(node.host, node.hypervisor_hostname) for node in
                     objects.ComputeNodeList.get_all(cctxt)]
        cache.warm(loader._read, cell_uuid, nodes)


def _rows(cctxt, uuids):
    """The instances ``uuids`` (flavor loaded, deleted and soft-deleted
    ones left out: Nova's ``deleted: False`` filter) of the cell ``cctxt``
    targets.

    Sorted by id: in Nova's default order (creation time first) SQLite
    walks the index of creation times of every row not deleted (9 ms at
    20,000 instances, for one victim, on every claim); by id it finds the
    rows through the index of uuids and deletion."""
    return objects.InstanceList.get_by_filters(
        cctxt, {'uuid': list(uuids), 'deleted': False},
        expected_attrs=['flavor'], sort_keys=['id'], sort_dirs=['desc'])


def _naive_utc(stamp):
    """A database time as the scheduler's clock gives it (naive UTC)."""
    if stamp is None or stamp.tzinfo is None:
        return stamp
    return stamp.astimezone(datetime.timezone.utc).replace(tzinfo=None)


def fits_host_state(host_state, spec_obj):
    """Does the request fit h_f as the HostState tells it? (The stock
    scheduler's view: no Placement summaries, no preemption.)"""
    host = record_from_host_state(host_state).core_host()
    return host.free_full.covers(request_of(spec_obj).resources)
