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

"""Why a preemption happened, in a record small enough to keep.

Every preemption is kept with its explanation (issue 27): what was asked,
the host chosen and why, each victim with its cost, the next best hosts
and why each lost, and how many hosts refused the request for each reason.
This module builds it from the core's own terms, without Nova: the
scheduler calls :func:`decision` at the moment it claims the victims, the
reconciler, which preempts for no request, :func:`repair`; the terminator
completes it (:func:`completed`) and stores it on each victim's
``opie-preempt`` instance action; ``opie-manage history`` reads it back
(:func:`loads`). The record is a dict of JSON types (version
:data:`VERSION`), bounded in size since Nova keeps it in a ``Text``
column (:data:`MAX_CHARS`).

Who ranked the hosts, the record's fields and its bounds:
``doc/source/design/index.rst``, "Modules in detail".
"""
import json
import math

from opie.core import scheduling

VERSION = 1
NOVA, OPIE = 'nova', 'opie'
REQUEST = 'request'
MAX_RUNNERS_UP = 3
MAX_VICTIMS = 20
MAX_REASONS = 20
MAX_TEXT = 255
MAX_CHARS = 32768


class Candidate:
    """A host that could take the request, as the scheduler ranked it.

    ``option``: its core HostOption, or None when it refused the request
    once its claim was tried; ``weight``: Nova's total weight for it (None
    unknown); ``failed``: why its claim failed, for a host ranked above
    the chosen one.
    """

    def __init__(self, host, option, weight=None, failed=''):
        self.host = host
        self.option = option
        self.weight = weight
        self.failed = failed


def _text(value):
    return None if value is None else str(value)[:MAX_TEXT]


def _num(value):
    """A cost or weight as JSON can hold it (no NaN, no infinity)."""
    value = float(value)
    return value if math.isfinite(value) else None


def _show(a, b=None):
    """``a`` (and ``b``) for a sentence: short, yet never two equal
    strings for two different numbers."""
    short = [repr(round(float(x), 6)) for x in (a, b) if x is not None]
    if b is not None and short[0] == short[1] and float(a) != float(b):
        return repr(float(a)), repr(float(b))
    return tuple(short) if b is not None else short[0]


def _terms(other, chosen, ranking):
    """What OPIE's terms say of ``other`` against ``chosen``: (sign,
    sentence); sign > 0 when OPIE prefers the chosen host, < 0 when it
    prefers ``other``, 0 on a tie (but for the name)."""
    if other.fits != chosen.fits:
        if other.fits:
            return -1, 'fits without preemption'
        return 1, 'needs a preemption where the chosen host does not'
    if other.tier != chosen.tier:
        sign = 1 if other.tier > chosen.tier else -1
        return sign, "its victims' tier %d %s %d" % (
            other.tier, '>' if sign > 0 else '<', chosen.tier)
    what = ('its preemptibles cost' if ranking == 'all-preemptibles'
            else 'its victims cost')
    if other.fits and ranking != 'all-preemptibles':
        return 0, 'fits too'
    if other.score == chosen.score:
        return 0, '%s %s too' % (what, _show(other.score))
    sign = 1 if other.score > chosen.score else -1
    mine, theirs = _show(other.score, chosen.score)
    return sign, '%s %s %s %s' % (what, mine, '>' if sign > 0 else '<',
                                  theirs)


def _why_lost(other, chosen, above, ranked_by, ranking):
    if above:
        return 'ranked above it, but its claim failed: %s' % (
            other.failed or 'unknown')
    if other.option is None:
        return 'refused the request: %s' % (other.failed or 'unknown')
    sign, said = _terms(other.option, chosen.option, ranking)
    if ranked_by == OPIE:
        return said if sign > 0 else '%s; the host name broke the tie' % said
    if sign > 0 and other.option.tier != chosen.option.tier:
        return "%s (a lower tier goes first, whatever Nova's weights)" % said
    if other.weight is None or chosen.weight is None:
        return said if sign > 0 else "%s, but Nova ranked it lower" % said
    mine, theirs = _show(other.weight, chosen.weight)
    if other.weight < chosen.weight:
        if sign > 0:
            return '%s (Nova weight %s < %s)' % (said, mine, theirs)
        return "%s, but Nova's weighers ranked it lower (weight %s < %s)" % (
            said, mine, theirs)
    if other.weight == chosen.weight:
        return ("%s; Nova's weighers gave both weight %s and Nova's order "
                'put the chosen host first' % (said, theirs))
    return ('%s; Nova weight %s > %s, but Nova picks at random among its '
            'best hosts ([filter_scheduler] host_subset_size)'
            % (said, mine, theirs))


def _why_chosen(chosen, ranked, ranking):
    """Against the hosts ranked below it (those above it failed their
    claims, and are counted)."""
    above = ranked.index(chosen)
    left = [c for c in ranked[above:] if c.option is not None]
    best = min(left, key=lambda c: scheduling.order(c.option))
    still = ' left' if above else ''
    if len(left) == 1:
        said = 'the only host%s that could take it' % still
    elif (scheduling.order(best.option)[:3]
          == scheduling.order(chosen.option)[:3]):
        said = 'the lowest %s (%s) of %d hosts%s that could take it' % (
            'cost of all preemptibles' if ranking == 'all-preemptibles'
            else 'cost', _show(chosen.option.score), len(left), still)
    else:
        _, better = _terms(best.option, chosen.option, ranking)
        said = '%s; by OPIE\'s terms alone %s would have been (%s)' % (
            _novas_pick(chosen, best), best.host, better)
    if above:
        said += '; %d host%s ranked above it could not be claimed' % (
            above, '' if above == 1 else 's')
    return said


def _novas_pick(chosen, best):
    """Why Nova placed ``chosen`` before ``best``, which OPIE's terms
    prefer and Nova ranked below it."""
    if chosen.weight is None or best.weight is None:
        return 'Nova ranked it first'
    if chosen.weight > best.weight:
        return "Nova's weighers put it first"
    if chosen.weight == best.weight:
        return "Nova's weighers tied it with %s and Nova's order put it " \
            'first' % best.host
    return ('Nova picked it at random among its best hosts '
            '([filter_scheduler] host_subset_size)')


def decision(chosen_host, victims, ranked, refused, ranked_by=OPIE,
             ranking='victims'):
    """The explanation of a preemption the scheduler decided.

    :param chosen_host: the name of the host the victims were taken on
    :param victims: ``[(core Instance, cost)]`` of the victims taken
    :param ranked: :class:`Candidate` of every host that could take the
        request, the chosen one included: in Nova's order if
        ``ranked_by`` is :data:`NOVA`, any order otherwise
    :param refused: ``{reason: number of hosts}`` that refused it
    :param ranking: the core's ranking (``victims`` or
        ``all-preemptibles``): what a host's score is
    """
    ranked = list(ranked)
    if ranked_by != NOVA:
        ranked.sort(key=lambda c: (c.option is None,
                                   c.option and scheduling.order(c.option)))
    chosen = next(c for c in ranked if c.host == chosen_host)
    above = ranked.index(chosen)
    others = [(c, i < above) for i, c in enumerate(ranked) if c is not chosen]
    cost = chosen.option.cost
    record = {
        'version': VERSION, 'reason': REQUEST, 'host': _text(chosen.host),
        'why': _text(_why_chosen(chosen, ranked, ranking)),
        'ranked_by': ranked_by, 'ranking': _text(ranking),
        'cost': _num(cost),
        'offset': _num(cost - sum(c for _, c in victims)),
        'runners_up': [_runner_up(c, chosen, was_above, ranked_by, ranking)
                       for c, was_above in others[:MAX_RUNNERS_UP]],
        'runners_up_omitted': max(0, len(others) - MAX_RUNNERS_UP),
        'refused': _refused(refused),
        'request': None}
    record.update(_victims(victims))
    return record


def _runner_up(candidate, chosen, above, ranked_by, ranking):
    option = candidate.option
    entry = {'host': _text(candidate.host),
             'fits': None if option is None else option.fits,
             'tier': None if option is None else option.tier,
             'cost': None if option is None else _num(option.cost),
             'victims': None if option is None else len(option.victims),
             'why_lost': _text(_why_lost(candidate, chosen, above,
                                         ranked_by, ranking))}
    if candidate.weight is not None:
        entry['weight'] = _num(candidate.weight)
    return entry


def _refused(refused):
    counts = sorted(refused.items(), key=lambda item: (-item[1], item[0]))
    kept = {_text(why): int(n) for why, n in counts[:MAX_REASONS]}
    left = sum(n for _, n in counts[MAX_REASONS:])
    if left:
        kept['(other reasons)'] = left
    return kept


def _victims(victims):
    listed = [{'uuid': _text(instance.uuid), 'cost': _num(cost)}
              for instance, cost in victims[:MAX_VICTIMS]]
    return {'victims': listed,
            'victims_omitted': max(0, len(victims) - MAX_VICTIMS)}


def repair(reason, host, why, victims, cost):
    """The explanation of a preemption the reconciler made, for no request:
    ``reason`` as in the notification ("reconcile", "claimed",
    "room-taken"), ``why`` one sentence."""
    record = {'version': VERSION, 'reason': _text(reason),
              'host': _text(host), 'why': _text(why), 'ranked_by': None,
              'ranking': None, 'cost': _num(cost),
              'offset': _num(cost - sum(c for _, c in victims)),
              'runners_up': [], 'runners_up_omitted': 0, 'refused': {},
              'request': None}
    record.update(_victims(victims))
    return record


def completed(record, instance_uuid=None, request=None, owners=None):
    """``record`` with what the scheduler did not hold: the request
    (``request``: project_id, flavor, vcpus, memory_mb, disk_gb; for the
    server ``instance_uuid``) and the victims' owners (``owners``:
    {uuid: {project_id, flavor}})."""
    record = dict(record)
    if request is not None:
        record['request'] = {
            'instance_uuid': _text(instance_uuid),
            'project_id': _text(request.get('project_id')),
            'flavor': _text(request.get('flavor')),
            **{k: request.get(k) for k in ('vcpus', 'memory_mb',
                                           'disk_gb')}}
    owners = owners or {}
    record['victims'] = [
        dict(v, **{k: _text(owners.get(v['uuid'], {}).get(k))
                   for k in ('project_id', 'flavor')})
        for v in record.get('victims', ())]
    return record


def dumps(record):
    """``record`` as ASCII JSON of at most :data:`MAX_CHARS` characters
    (victims and runner-ups dropped from the end, and counted as omitted,
    in the unlikely case the bounds above do not suffice)."""
    record = dict(record)
    while True:
        text = json.dumps(record, sort_keys=True, allow_nan=False)
        if len(text) <= MAX_CHARS:
            return text
        for listed, omitted in (('victims', 'victims_omitted'),
                                ('runners_up', 'runners_up_omitted')):
            if record.get(listed):
                record[listed] = record[listed][:-1]
                record[omitted] = record.get(omitted, 0) + 1
                break
        else:
            raise ValueError('explanation too long to keep')


def loads(text):
    """The explanation kept as ``text``, or None if it is none (not JSON,
    not a JSON object): a reader never fails on one bad row."""
    try:
        record = json.loads(text)
    except (TypeError, ValueError):
        return None
    return record if _well_formed(record) else None


# The types a kept explanation's fields must have, where present.
_NUMBER = (int, float)
_SHAPE = {'victims': list, 'runners_up': list, 'request': dict,
          'refused': dict, 'victims_omitted': int,
          'runners_up_omitted': int, 'cost': _NUMBER, 'offset': _NUMBER}


def _well_formed(record):
    """Is ``record`` an explanation as this module writes them (another
    writer's, or a row edited by hand, may not be)?"""
    if not isinstance(record, dict):
        return False
    for field, kind in _SHAPE.items():
        value = record.get(field)
        if value is not None and (not isinstance(value, kind)
                                  or isinstance(value, bool)):
            return False
    return (all(isinstance(v, dict) for v in record.get('victims') or ())
            and all(isinstance(r, dict)
                    for r in record.get('runners_up') or ())
            and all(isinstance(n, int) and not isinstance(n, bool)
                    for n in (record.get('refused') or {}).values()))
