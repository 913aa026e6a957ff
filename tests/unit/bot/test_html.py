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

import copy
import dataclasses
import re
import xml.etree.ElementTree as ET

import pytest

from opie.bot.report import html_page
from opie.bot.sim import map_choice
from opie.bot.report import report
from opie.bot.sim import backend
from opie.bot.job import units
from tests.unit.bot import helpers

HOSTILE_TASK = '<script>alert("t")</script>'
HOSTILE_FLAVOR = 'c4"><img src=x onerror=alert(1)>'
HOSTILE_KEY = "p0'&<b>"


@pytest.fixture(scope='module')
def plan():
    return map_choice.primary_map(helpers.example('j60'))


@pytest.fixture(scope='module')
def sim_result(plan):
    return backend.run(plan, kh=3, kr=2.5, seed=4)


@pytest.fixture(scope='module')
def base(plan):
    return report.baseline(plan, backend.run)


@pytest.fixture(scope='module')
def rep(sim_result, base):
    return report.build(sim_result, base)


@pytest.fixture(scope='module')
def real_rep(sim_result, base):
    # What openstack.live.build_report hands over: no preemption model,
    # no seed, no cloud bill.
    result = dataclasses.replace(sim_result, kh=None, kr=None, seed=None,
                                 mode='openstack', bill=None)
    return report.build(result, base)


def _moved_report(plan, deadline=None):
    """One task, preempted on a preemptible server, moved to a normal one;
    every tenant-controlled name hostile."""
    def create(server, key, market, reason):
        return {'t': 0.0, 'event': 'server_create', 'server': server,
                'key': key, 'flavor': HOSTILE_FLAVOR, 'market': market,
                'price_h': 0.1, 'reason': reason}

    records = [
        create('s1', HOSTILE_KEY, 'preemptible', 'plan'),
        create('s2', 'm1', 'normal', 'migration'),
        {'t': 60.0, 'event': 'server_active', 'server': 's1'},
        {'t': 60.0, 'event': 'server_active', 'server': 's2'},
        {'t': 60.0, 'event': 'task_start', 'task': HOSTILE_TASK,
         'server': 's1', 'saved': 0.0, 'wall': 600.0},
        {'t': 300.0, 'event': 'server_hibernated', 'server': 's1'},
        {'t': 400.0, 'event': 'task_migrate', 'task': HOSTILE_TASK,
         'src': 's1', 'dst': 's2', 'via': 'new', 'saved': 0.3},
        {'t': 400.0, 'event': 'task_start', 'task': HOSTILE_TASK,
         'server': 's2', 'saved': 0.3, 'wall': 400.0},
        {'t': 800.0, 'event': 'task_finish', 'task': HOSTILE_TASK,
         'server': 's2'},
        {'t': 800.0, 'event': 'done', 'tasks': 1},
        {'t': 800.0, 'event': 'server_delete', 'server': 's1',
         'reason': 'job done'},
        {'t': 800.0, 'event': 'server_delete', 'server': 's2',
         'reason': 'job done'},
    ]
    result = backend.Result(
        plan=plan, records=records, bill=None,
        preemptions=[{'t': 300.0, 'flavor': HOSTILE_FLAVOR,
                      'event': 'hibernate', 'servers': 1}],
        checkpoints=1, finished=True, kh=None, kr=None, seed=None,
        mode='openstack')
    rep = report.build(result)
    rep['job']['name'] = '<i>job</i>'
    if deadline is not None:
        rep['job']['deadline_s'] = deadline
    return rep


def _svgs(page):
    # Each chart is well-formed XML on its own: parse it as such.
    return [ET.fromstring(s)
            for s in re.findall(r'<svg.*?</svg>', page, re.S)]


def _headline(page):
    return re.search(r'<section class="headline">(.*?)</section>',
                     page, re.S).group(1)


def test_fmt_time_reads_like_the_console():
    assert units.fmt_time(2095.4) == '34:55'
    assert units.fmt_time(59.6) == '1:00'
    assert units.fmt_time(3600) == '1:00:00'
    assert units.fmt_time(5 * 3600 + 61) == '5:01:01'
    assert units.fmt_time(-65) == '-1:05'


def test_headline_tells_deadline_cost_preemptions_and_moves(rep):
    page = html_page.render(rep)
    head = _headline(page)
    res = rep['result']
    assert 'Deadline met' in head
    assert units.fmt_time(res['makespan_s']) in head
    assert units.fmt_time(rep['job']['deadline_s']) in head
    assert '$%.4f' % res['baseline_cost'] in head
    # The scheduler may beat the baseline or not: the headline says which.
    assert '%.1f %%' % abs(100 * res['saving']) in head
    assert ('less than' if res['saving'] >= 0 else 'more than') in head
    assert '%d preemptions' % rep['counts']['preemption_events'] in head
    assert '%d task migrations' % rep['counts']['migrations'] in head
    assert 'kh=3 kr=2.5 seed=4' in head
    # The headline leads; the paper's terms wait folded below it.
    assert page.index('class="headline"') < page.index('<svg')
    assert 'mtt' not in page.split('<details')[0]
    assert 'resume guard' not in page.split('<details')[0]


def test_headline_says_by_how_much_a_deadline_was_missed(rep):
    late = copy.deepcopy(rep)
    late['result']['makespan_s'] = rep['job']['deadline_s'] + 130
    late['result']['deadline_met'] = False
    assert 'Deadline missed by 2:10' in _headline(html_page.render(late))
    late['result']['makespan_s'] = None
    assert 'did not finish' in _headline(html_page.render(late))


def test_headline_without_a_baseline(plan):
    head = _headline(html_page.render(_moved_report(plan)))
    assert 'no normal-only baseline' in head


def test_counters_are_folded_and_explained(rep):
    page = html_page.render(rep)
    details = re.search(r'<details><summary>All counters</summary>(.*?)'
                        r'</details>', page, re.S).group(1)
    rows = re.findall(r'<tr><th>(.*?)</th><td>(.*?)</td>'
                      r'<td class="muted">(.*?)</td></tr>', details)
    assert len(rows) == len(rep['counts'])
    assert all(why for _, _, why in rows)
    assert 'mtt' in details
    assert 'new 4' in details or 'busy' in details


def test_a_real_run_prints_no_none(real_rep):
    page = html_page.render(real_rep)
    assert 'None' not in page
    assert 'kh=' not in page and 'seed=' not in page
    assert 'mode openstack' in _headline(page)


def test_charts_scale_to_the_window(rep):
    for svg in _svgs(html_page.render(rep)):
        assert svg.get('width') == '100%'
        assert 'height' not in svg.attrib
        x0, y0, w, h = (float(v) for v in svg.get('viewBox').split())
        assert (x0, y0) == (0, 0) and w > 0 and h > 0
        for rect in svg.iter('rect'):
            assert 0 <= float(rect.get('x'))
            assert float(rect.get('x')) + float(rect.get('width')) <= w
            assert float(rect.get('y')) + float(rect.get('height')) <= h


@pytest.mark.parametrize('deadline', [None, 5 * 3600 + 17.0, 97.0])
def test_the_last_axis_label_is_inside_the_viewbox(plan, rep, deadline):
    page = html_page.render(rep if deadline is None
                            else _moved_report(plan, deadline))
    for svg in _svgs(page):
        w = float(svg.get('viewBox').split()[2])
        ticks = [t for t in svg.iter('text') if t.get('class') == 'tick']
        assert len(ticks) >= 2
        last = ticks[-1]
        x = float(last.get('x'))
        # An upper bound of the label's width at the chart's font size.
        width = 0.62 * float(svg.get('font-size')) * len(last.text)
        right = {'middle': x + width / 2, 'end': x,
                 'start': x + width}[last.get('text-anchor')]
        assert right <= w
        assert float(last.get('y')) <= float(svg.get('viewBox').split()[3])
    if deadline and deadline > 3600:
        assert ':00:00' in ticks[-1].text


def test_preemption_and_migration_markers(plan):
    page = html_page.render(_moved_report(plan))
    gantt = _svgs(page)[0]
    hits = [p for p in gantt.iter('path') if p.get('class') == 'preemption']
    assert len(hits) == 1
    assert 'preemption at 5:00' in hits[0].find('title').text
    moves = [g for g in gantt.iter('g') if g.get('class') == 'migration']
    assert len(moves) == 1
    line = moves[0].find('line')
    assert line.get('marker-end') == 'url(#opie-arrow)'
    # From the preempted server's row down to the normal server's row.
    assert float(line.get('y2')) > float(line.get('y1'))
    assert float(line.get('x2')) >= float(line.get('x1'))
    assert 's1 to s2' in moves[0].find('title').text
    assert 'preemption' in page.split('<svg')[0]      # the legend
    assert '1 task migration (1 of a running task' in _headline(page)


def test_tenant_names_are_escaped(plan):
    page = html_page.render(_moved_report(plan))
    assert '<script' not in page and '<img' not in page
    assert '<i>job' not in page and '<b>' not in page
    assert '&lt;script&gt;alert(&quot;t&quot;)&lt;/script&gt;' in page
    assert '&lt;i&gt;job&lt;/i&gt;' in page
    # Still well-formed: no attribute was broken out of.
    assert len(_svgs(page)) == 2
