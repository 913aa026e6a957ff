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

"""The schedulers' Prometheus textfiles move with a preemption (issue 13
point 6).

The lab sets ``[opie] metrics_dir``: every worker of both opie-scheduler
services writes its own ``opie-scheduler.<host>.<worker>.prom`` there, as
node_exporter's textfile collector would read them, its samples labelled
with that host and worker slot (issue 27: no pid, so no new series when a
worker restarts). The workers Nova forks for one service take slots 0 to
``[scheduler] workers`` - 1. Tenant alpha fills the cloud with small
preemptible servers, tenant beta boots a normal one; summed over the
files, one more preempted instance (reason ``request``), one more victim
taken by a request placed, and every boot placed and its answer timed.
"""
import os
import re

from prometheus_client import parser

from opie.lab import configs
from opie.lab import settings
from opie.testing import lab

SMALL_PER_HOST = 4
DIRECTORY = configs.metrics_dir(lab.LAB)
PREEMPTED = ('opie_preemptions_total',
             (('mode', 'delete'), ('reason', 'request')))
PLACED = ('opie_victims_per_request_count', ())
VICTIMS = ('opie_victims_per_request_sum', ())
ANSWERED = ('opie_select_destinations_seconds_count', ())


def read():
    """{(sample name, sorted labels but host and worker): value} summed
    over the workers' files; and {file's (host, worker): the (host,
    worker) pairs its samples name}."""
    totals, workers = {}, {}
    for name in sorted(os.listdir(DIRECTORY)):
        match = re.match(r'^opie-scheduler\.(.+)\.(\d+)\.prom$', name)
        if not match:
            continue
        try:
            with open(os.path.join(DIRECTORY, name), encoding='utf-8') as f:
                text = f.read()
        except FileNotFoundError:
            # A worker that stopped; another removed its file.
            continue
        named = workers.setdefault(match.groups(), set())
        for family in parser.text_string_to_metric_families(text):
            for sample in family.samples:
                labels = dict(sample.labels)
                named.add((labels.pop('host'), labels.pop('worker')))
                key = (sample.name, tuple(sorted(labels.items())))
                totals[key] = totals.get(key, 0.0) + sample.value
    return totals, workers


def test_each_forked_worker_has_its_own_slot():
    expected = {str(slot) for slot in range(settings.SCHEDULER_WORKERS)}

    def slotted():
        slots = {}
        for host, worker in read()[1]:
            slots.setdefault(host, set()).add(worker)
        return (len(slots) == settings.SCHEDULERS
                and all(found == expected for found in slots.values()))
    # A worker writes at start and every heartbeat, and removes the files
    # of slots no worker holds.
    lab.wait_for('a file per slot of each scheduler service', slotted)


def test_counters_move_with_a_preemption():
    before, workers = lab.wait_for(
        'every scheduler worker\'s metrics file',
        lambda: os.path.isdir(DIRECTORY) and read())
    # Each file is one worker's: its samples carry its own host and slot.
    assert workers and all(named == {worker}
                           for worker, named in workers.items())

    # The servers deleted before this test may hold allocations a moment
    # longer than they are listed.
    lab.wait_for('Placement to free every deleted server', lambda: all(
        used == 0 for usage in lab.usages_and_capacity().values()
        for rc, (used, _) in usage.items() if rc != 'CUSTOM_OPIE_HOST'))
    alpha = lab.nova('lab-alpha')
    fillers = lab.boot(alpha, 'filler', 'small-preemptible',
                       count=SMALL_PER_HOST * lab.LAB.computes)
    assert all(s.status == 'ACTIVE'
               for s in lab.settled(set(fillers)).values())
    beta = lab.nova('lab-beta')
    normal, = lab.boot(beta, 'normal', 'small')
    assert lab.settled({normal})[normal].status == 'ACTIVE'
    lab.wait_for('one preemptible server to be deleted', lambda: len(
        alpha.servers.list()) == len(fillers) - 1)

    boots = len(fillers) + 1

    def moved():
        # The preempting worker writes its file at once; the others at
        # their next heartbeat.
        after, _ = read()
        if (after.get(PREEMPTED, 0) > before.get(PREEMPTED, 0)
                and after.get(PLACED, 0) >= before.get(PLACED, 0) + boots
                and after.get(ANSWERED, 0) >= before.get(ANSWERED, 0)
                + boots):
            return after
        return None
    after = lab.wait_for('the boots and the preemption to be counted',
                         moved)

    assert after[PREEMPTED] == before.get(PREEMPTED, 0) + 1
    # Only the normal boot took a victim, one.
    assert after[VICTIMS] == before.get(VICTIMS, 0) + 1
