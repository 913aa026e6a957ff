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

"""Statistics over many simulated runs: mean and P10-P90 per scenario.

Work lost to preemptions (task-seconds no checkpoint saved, see
:mod:`opie.bot.hads.executor`) is a column of its own, with its ratio to the
preemptions of the cell: the table shows them when asked (``lost``), so
that a table without them reads as it always did.
"""
import dataclasses

from opie.bot.report import report as report_mod

METRICS = (
    ('cost', 'cost ($)', '%.3f'),
    ('makespan', 'makespan (s)', '%.0f'),
    ('preemptions', 'preemptions', '%.1f'),
    ('migrations', 'migrations', '%.1f'),
    ('normal', 'normal servers', '%.1f'),
)
LOST = ('lost', 'lost work (s)', '%.0f')


def percentile(values, q):
    """Linear interpolation between closest ranks, like numpy's default."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def metrics(result):
    """The figures of one run that the table aggregates."""
    records = result.records
    done = [r['t'] for r in records if r['event'] == 'done']
    end = done[0] if done else max(r['t'] for r in records)
    rows = report_mod.servers(records, end)
    deadline = result.plan.job.deadline_s
    return {
        'cost': sum(s['cost'] for s in rows),
        'makespan': end,
        'preemptions': sum(1 for r in records if r['event'] in
                           ('server_hibernated', 'server_preempted')),
        'migrations': sum(1 for r in records
                          if r['event'] == 'task_migrate'),
        'normal': sum(1 for s in rows if s['market'] == 'normal'),
        'lost': sum(r['lost_s'] for r in records
                    if r['event'] == 'work_lost'),
        'miss': not done or end > deadline,
    }


@dataclasses.dataclass
class Cell:
    scenario: str
    runs: list

    def mean(self, key):
        return sum(r[key] for r in self.runs) / len(self.runs)

    def spread(self, key):
        values = [r[key] for r in self.runs]
        return percentile(values, 0.1), percentile(values, 0.9)

    def lost_per_preemption(self):
        """Work lost per preemption over all the cell's runs."""
        preempted = sum(r['preemptions'] for r in self.runs)
        return sum(r['lost'] for r in self.runs) / preempted if preempted \
            else 0.0

    @property
    def misses(self):
        return sum(1 for r in self.runs if r['miss'])


def run_cells(plan, scenarios, seeds, simulate):
    """``simulate(plan, scenario, seed)`` returns a backend Result."""
    return [Cell(sc.name, [metrics(simulate(plan, sc, seed))
                           for seed in range(seeds)])
            for sc in scenarios]


def rows(cells, baseline_cost=None, lost=False):
    """Header and rows of the table, as strings; ``lost`` adds the work
    lost, in all and per preemption."""
    metrics_ = METRICS + (LOST,) if lost else METRICS
    header = ['scenario'] + [label for _, label, _ in metrics_]
    if lost:
        header.append('lost/preemption (s)')
    header.append('misses')
    if baseline_cost:
        header.insert(2, 'saving')
    out = []
    for cell in cells:
        row = [cell.scenario]
        for key, _, fmt in metrics_:
            lo, hi = cell.spread(key)
            row.append('%s [%s-%s]' % (fmt % cell.mean(key), fmt % lo,
                                       fmt % hi))
        if baseline_cost:
            row.insert(2, '%.0f %%' % (100 * (1 - cell.mean('cost')
                                              / baseline_cost)))
        if lost:
            row.append('%.1f' % cell.lost_per_preemption())
        row.append('%d/%d' % (cell.misses, len(cell.runs)))
        out.append(row)
    return header, out


def text_table(header, body):
    widths = [max(len(r[i]) for r in [header] + body)
              for i in range(len(header))]
    lines = ['  '.join(c.ljust(w) for c, w in zip(r, widths))
             for r in [header] + body]
    lines.insert(1, '  '.join('-' * w for w in widths))
    return '\n'.join(lines)


def rst_table(header, body):
    """A reStructuredText grid table."""
    widths = [max(len(r[i]) for r in [header] + body)
              for i in range(len(header))]

    def line(char):
        return '+' + '+'.join(char * (w + 2) for w in widths) + '+'

    def row(cells):
        return '|' + '|'.join(' %s ' % c.ljust(w)
                              for c, w in zip(cells, widths)) + '|'
    out = [line('-'), row(header), line('=')]
    for r in body:
        out += [row(r), line('-')]
    return '\n'.join(out)
