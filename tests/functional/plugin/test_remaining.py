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

"""A request that knows no project has a budget asks nothing more per
host (:attr:`opie.nova.request.ledger.Remaining.unlimited`), and learns
otherwise as soon as anything says a ledger may exist."""
from unittest import mock

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from opie.nova.request import ledger


def _remaining(default):
    # Placement knows no ledger trait: no ledger was ever written.
    client = mock.Mock()
    client.get.return_value = mock.Mock(status_code=200,
                                        json=lambda: {'traits': []})
    return client, ledger.Remaining(client, mock.Mock(global_id='g'),
                                    default)


def test_unknown_until_the_ledgers_are_listed():
    _, remaining = _remaining(None)
    assert not remaining.unlimited
    assert remaining.of({'p1'}) == {}
    assert remaining.unlimited


def test_never_with_a_default_budget():
    _, remaining = _remaining(600)
    assert remaining.of({'p1'}) == {'p1': 600}
    assert not remaining.unlimited


def test_a_refused_write_makes_it_ask_again():
    client, remaining = _remaining(None)
    remaining.of({'p1'})
    remaining.forget({'p1'})
    assert not remaining.unlimited
    # Another worker wrote p1's ledger meanwhile: it is read.
    client.get.side_effect = [
        mock.Mock(status_code=200, json=lambda: {'inventories': {
            ledger.RESOURCE_CLASS: {'total': 60}}}),
        mock.Mock(status_code=200, json=lambda: {'usages': {
            ledger.RESOURCE_CLASS: 20}})]
    assert remaining.of({'p1'}) == {'p1': 40}


# The shortcut is safe: whatever a request did, while ``unlimited`` holds
# the lookup it skips would have found no budget and asked nothing.
PROJECTS = ('', 'p1', 'p2', 'p3')


class Ledgers:
    """Placement holding ledgers of ``budgets`` (project -> vCPU-minutes,
    None: a ledger without a budget), changed by others at any time."""

    def __init__(self):
        self.budgets = {}
        self.calls = 0
        # The first ledger writes the traits; a rollback deletes them.
        self.traits = []
        self.refused = 0

    def get(self, url, **kwargs):
        self.calls += 1
        if url.startswith('/traits?name=in:'):
            names = url[len('/traits?name=in:'):].split(',')
            return mock.Mock(status_code=200, json=lambda: {
                'traits': [t for t in self.traits if t in names]})
        if url.startswith('/resource_providers?required='):
            required = url[len('/resource_providers?required='):]
            if any(t.lstrip('!') not in self.traits
                   for t in required.split(',')):
                # Placement refuses to filter by a trait it does not know.
                self.refused += 1
                return mock.Mock(status_code=400, text='unknown trait')
            return mock.Mock(status_code=200, json=lambda: {
                'resource_providers': [
                    {'uuid': ledger.provider_uuid(p),
                     'name': ledger.provider_name(p)}
                    for p in self.budgets]})
        project = {ledger.provider_uuid(p): p for p in self.budgets}.get(
            url.split('/')[2])
        if project is None:
            return mock.Mock(status_code=404)
        budget = self.budgets[project]
        if url.endswith('/inventories'):
            return mock.Mock(status_code=200, json=lambda: {
                'inventories': {} if budget is None else {
                    ledger.RESOURCE_CLASS: {'total': budget}}})
        return mock.Mock(status_code=200, json=lambda: {'usages': {}})


steps = st.lists(st.one_of(
    st.tuples(st.just('of'), st.sets(st.sampled_from(PROJECTS))),
    st.tuples(st.just('forget'), st.sets(st.sampled_from(PROJECTS[1:]))),
    st.tuples(st.just('ledger'), st.sampled_from(PROJECTS[1:]),
              st.sampled_from([None, 0, 60])),
    st.tuples(st.just('unset'), st.sampled_from(PROJECTS[1:]))),
    max_size=12)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(steps)
def test_unlimited_only_where_no_budget_would_be_found(steps):
    placement = Ledgers()
    remaining = ledger.Remaining(placement, mock.Mock(global_id='g'), None,
                                 ledger.Traits())
    for step in steps:
        if step[0] == 'of':
            remaining.of(step[1])
        elif step[0] == 'forget':
            # Only a request's charges are forgotten: they were read.
            remaining.forget(step[1] & set(remaining._left))
        elif step[0] == 'ledger':
            placement.budgets[step[1]] = step[2]
            placement.traits = [ledger.TRAIT, ledger.SET_TRAIT]
        else:
            placement.budgets.pop(step[1], None)
        if remaining.unlimited:
            calls = placement.calls
            assert remaining.of(set(PROJECTS)) == {}
            assert placement.calls == calls


# A scheduler process's memo of the ledgers' traits (ledger.Traits) is
# shared by its requests; the traits appear with the first ledger and go
# with a rollback, at any time between two requests, of this worker or of
# another. Whatever happened, a request finds what a fresh read of
# Placement gives.
changes = st.lists(st.one_of(
    st.tuples(st.just('ledger'), st.sampled_from(PROJECTS[1:]),
              st.sampled_from([None, 0, 60])),
    st.tuples(st.just('unset'), st.sampled_from(PROJECTS[1:])),
    # A ledger's write half-way: the traits, not the provider yet.
    st.tuples(st.just('traits'), st.sampled_from([
        [ledger.TRAIT], [ledger.TRAIT, ledger.SET_TRAIT]])),
    # A rollback: the ledgers, then the traits in name order (half-way:
    # the first deleted only).
    st.tuples(st.just('rollback'), st.sampled_from([
        [ledger.TRAIT], [ledger.TRAIT, ledger.SET_TRAIT]]))),
    max_size=3)
requests = st.lists(st.tuples(changes, st.sampled_from([0, 1]), st.lists(
    st.sets(st.sampled_from(PROJECTS)), min_size=1, max_size=3)),
    max_size=8)


def _fresh(placement, default, projects):
    """What each of ``projects`` has left, as Placement says now."""
    found = {}
    for project in projects:
        budget = placement.budgets.get(project) if project else None
        if budget is None:
            budget = default if project else None
        if budget is not None:
            found[project] = budget
    return found


@settings(max_examples=400, deadline=None, derandomize=True)
@given(requests, st.sampled_from([None, 600]))
def test_each_request_of_a_worker_finds_the_budgets(requests, default):
    placement = Ledgers()
    workers = [ledger.Traits(), ledger.Traits()]
    rollbacks, refused = 0, [0, 0]
    for changed, worker, lookups in requests:
        for change in changed:
            if change[0] == 'ledger':
                placement.traits = sorted(
                    set(placement.traits) | {ledger.TRAIT, ledger.SET_TRAIT})
                placement.budgets[change[1]] = change[2]
            elif change[0] == 'unset':
                placement.budgets.pop(change[1], None)
            elif change[0] == 'traits':
                placement.traits = sorted(set(placement.traits)
                                          | set(change[1]))
            else:
                rollbacks += 1
                placement.budgets.clear()
                placement.traits = [t for t in placement.traits
                                    if t not in change[1]]
        remaining = ledger.Remaining(placement, mock.Mock(global_id='g'),
                                     default, workers[worker])
        before = placement.refused
        for projects in lookups:
            assert remaining.of(projects) == _fresh(placement, default,
                                                    projects)
        # A listing refused (an error in Placement's log) only for traits
        # deleted since the worker saw them: once per deletion.
        refused[worker] += placement.refused - before
        assert refused[worker] <= rollbacks
