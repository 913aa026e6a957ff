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

"""A self-contained HTML page for a run report.

It leads with what a tenant asks first: was the deadline met, what did
the run cost against normal servers only, and where did preemptions hit
and tasks move.  The paper's counters follow, folded away and explained.

No JavaScript and no third-party library: the charts are inline SVG, so
the page opens anywhere and can be attached to a ticket.  The charts
draw in a fixed coordinate system (``viewBox``) and are scaled to the
window by the browser.  Every string from the job file or the cloud (job,
task, flavor and server names) is escaped: the page must not run what a
tenant typed.
"""
import html

from opie.bot.job import units

# Chart coordinates (viewBox units, not pixels).  _RIGHT leaves room for
# the last axis label, centred on a tick at most at the plot's right edge.
_W, _LEFT, _RIGHT, _TOP, _ROW = 1000, 170, 40, 26, 18
_AXIS = 24
_FONT = 10
# An upper bound of a sans-serif glyph's width, in ems, to keep labels in.
_EM = 0.62
_LABEL_CHARS = 26
_COLOURS = {'preemptible': '#4878a8', 'normal': '#d9822b'}
_PREEMPT = '#c0392b'
_MOVE = '#7d3c98'
# Tick steps a reader counts in: the smallest giving at most _TICKS ticks.
_STEPS = (30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
          43200, 86400)
_TICKS = 10

# One plain line per counter of report['counts'], in the order shown.
_COUNTERS = (
    ('preemption_events', 'preemptions',
     'Preemptions the cloud sent; one can hibernate every server of a '
     'flavor.'),
    ('servers_hibernated', 'server hibernations',
     'Times a server was frozen by a preemption (frozen time is not '
     'billed).'),
    ('servers_terminated', 'servers terminated',
     'Servers deleted by a preemption; their tasks moved at once.'),
    ('boot_failures', 'boot failures',
     'Servers that never booted (no room on the cloud); lost like a '
     'preempted server but not counted as a preemption.'),
    ('resumes_before_mtt', 'resumes in time',
     'Hibernated servers back before the migration trigger time (mtt, '
     'the last moment their tasks could still move and meet the '
     'deadline): their tasks carried on.'),
    ('resumes_after_mtt', 'resumes too late',
     'Hibernated servers back after mtt, when their tasks had already '
     'moved.'),
    ('migrations', 'migrations',
     'Times a task, running or queued, was moved to another server.'),
    ('migrations_by_target', 'migrations by target',
     'Where moved tasks went: idle or busy servers already running, new '
     'normal servers, or a server taking stranded tasks.'),
    ('work_stealing_calls', 'work-stealing attempts',
     'Times an idle server looked for queued work on busy servers.'),
    ('tasks_stolen', 'tasks stolen',
     'Queued tasks an idle server took over from a busy one.'),
    ('checkpoints', 'checkpoints',
     'Task states saved, so that a moved task need not start over.'),
    ('restores', 'restores',
     'Task starts from a checkpoint rather than from the beginning.'),
    ('resume_guard_moves', 'resume-guard moves',
     'Tasks moved off a resumed server whose queue could no longer meet '
     'the deadline.'),
    ('notices', 'preemption notices',
     'Servers told ahead that they would be preempted: they took no new '
     'work, and their tasks checkpointed and moved at once.'),
    ('work_lost_s', 'work lost (s)',
     'Seconds of task work done since the last checkpoint that a '
     'preemption threw away, to be done again elsewhere.'),
    ('duplicate_runs', 'duplicate runs',
     'Runs that ended after another run of the same task had stored its '
     'result; their result was dropped.'),
    ('found_committed', 'found already done',
     'Tasks not run again because another run had already stored their '
     'result.'),
    ('failed_tasks', 'failed tasks',
     'Tasks whose command still failed after every retry.'),
    ('client_resumes', 'client restarts',
     'Times the opie-bot client was restarted and carried on from its '
     'journal.'),
    ('normal_servers', 'normal servers',
     'On-demand servers used; never preempted, dearer.'),
    ('preemptible_servers', 'preemptible servers',
     'Cheaper servers the cloud may take back.'),
)

_STYLE = (
    'body{font-family:sans-serif;max-width:80em;margin:1em auto;'
    'padding:0 1em;color:#222}'
    'th{text-align:left;padding-right:1em;vertical-align:top}'
    'td{vertical-align:top;padding-right:1em}'
    '.headline p{font-size:1.1em;margin:.3em 0}'
    '.met{color:#1e7b34}.missed{color:#b22}'
    '.sw{display:inline-block;width:1.2em;height:.8em;'
    'vertical-align:middle}'
    '.legend span.item{margin-right:1.2em;white-space:nowrap}'
    '.muted{color:#666;font-size:.9em}'
    'svg{display:block;width:100%;height:auto}'
    'details{margin:.8em 0}summary{cursor:pointer;font-weight:bold}')


def _esc(value):
    return html.escape(str(value))


def _t(seconds):
    return units.fmt_time(seconds)


def _num(value):
    """A parameter as a person writes it: 3 not 3.0, 2.5 not 2.500."""
    return '%g' % value if isinstance(value, float) else str(value)


def _x(t, horizon):
    return _LEFT + (_W - _LEFT - _RIGHT) * t / horizon


def _text_width(text, size=_FONT):
    return _EM * size * len(text)


def _short(text):
    """A row label that stays in the label column; the full one is in
    the row's tooltip."""
    text = str(text)
    if len(text) <= _LABEL_CHARS:
        return text
    return text[:_LABEL_CHARS - 1] + '\u2026'


def _svg(height, label):
    return ('<svg viewBox="0 0 %d %d" width="100%%" '
            'preserveAspectRatio="xMinYMin meet" role="img" '
            'aria-label="%s" font-size="%d">' % (_W, height, _esc(label),
                                                 _FONT))


def _tick_step(horizon):
    for step in _STEPS:
        if horizon / step <= _TICKS:
            return step
    return _STEPS[-1] * max(1, int(horizon / (_STEPS[-1] * _TICKS)) + 1)


def _axis(horizon, y):
    """Ticks along ``y`` labelled like the console, every label inside
    the chart."""
    out = ['<line x1="%d" x2="%.1f" y1="%d" y2="%d" stroke="#999"/>'
           % (_LEFT, _x(horizon, horizon), y - 8, y - 8)]
    step = _tick_step(horizon)
    for t in range(0, int(horizon) + 1, step):
        x = _x(t, horizon)
        label = _t(t)
        half = _text_width(label) / 2
        # Centred on the tick, unless that would cross the chart's edge.
        if x + half > _W:
            anchor, tx = 'end', x
        else:
            anchor, tx = 'middle', x
        out.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" '
                   'stroke="#999"/><text x="%.1f" y="%d" fill="#555" '
                   'text-anchor="%s" class="tick">%s</text>'
                   % (x, x, y - 12, y - 4, tx, y + 6, anchor, label))
    return out


def _time_lines(report, horizon, bottom):
    """The deadline and Dspot as dashed verticals, labelled on two
    lines so that close values do not overprint."""
    marks = [('deadline %s' % _t(report['job']['deadline_s']),
              report['job']['deadline_s'], _PREEMPT, 10),
             ('Dspot %s' % _t(report['plan']['dspot_s']),
              report['plan']['dspot_s'], '#777', 21)]
    out = []
    for label, t, colour, y in marks:
        if t is None or t > horizon:
            continue
        x = _x(t, horizon)
        out.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" '
                   'stroke="%s" stroke-dasharray="4 3"/>'
                   % (x, x, y + 2, bottom, colour))
        # Right-aligned on the line: it may sit at the right edge.
        out.append('<text x="%.1f" y="%d" fill="%s" text-anchor="end">%s'
                   '</text>' % (x - 3, y, colour, _esc(label)))
    return out


def _moves(report):
    """Running tasks that moved: (task, from segment, to segment or None).

    A segment ending 'moved' is a run cut short on its server; the task's
    next run is where it went.
    """
    by_task = {}
    for seg in report['segments']:
        by_task.setdefault(seg['task'], []).append(seg)
    out = []
    for task, runs in by_task.items():
        runs.sort(key=lambda s: s['start'])
        for i, seg in enumerate(runs):
            if seg['outcome'] == 'moved':
                nxt = runs[i + 1] if i + 1 < len(runs) else None
                out.append((task, seg, nxt))
    out.sort(key=lambda m: m[1]['end'])
    return out


def _preemption_hits(rows):
    """(server row, time, what) for every preemption that hit a server."""
    hits = []
    for s in rows:
        for a, _ in s['hibernations']:
            hits.append((s, a, 'hibernated'))
        if s['end_reason'] == 'preempted' and s['ended'] is not None:
            what = ('terminated' if s['active'] is not None
                    else 'lost before it booted')
            hits.append((s, s['ended'], what))
    return hits


def _gantt(report, horizon):
    rows = sorted(report['servers'], key=lambda s: (s['created'],
                                                    s['server']))
    index = {s['server']: i for i, s in enumerate(rows)}
    bottom = _TOP + _ROW * len(rows)
    height = bottom + _AXIS

    def top(server):
        return _TOP + _ROW * index[server]

    out = [_svg(height, 'tasks on servers over time'),
           '<defs><marker id="opie-arrow" viewBox="0 0 10 10" refX="9" '
           'refY="5" markerWidth="6" markerHeight="6" orient="auto">'
           '<path d="M0,0 L10,5 L0,10 z" fill="%s"/></marker></defs>'
           % _MOVE]
    for s in rows:
        y = top(s['server'])
        end = s['ended'] if s['ended'] is not None else horizon
        label = '%s %s' % (s['key'], s['flavor'])
        if s.get('reason') in ('migration', 'take-over'):
            label += ' (new)'
        out.append('<text x="2" y="%d"><title>%s</title>%s</text>'
                   % (y + 12, _esc('%s: %s, %s server, created for %s, '
                                   'billed %d s, $%.4f'
                                   % (s['server'], label, s['market'],
                                      s.get('reason'), s['billed_s'],
                                      s['cost'])),
                      _esc(_short(label))))
        out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" '
                   'fill="#eee"/>' % (_x(s['created'], horizon), y,
                                      max(_x(end, horizon)
                                          - _x(s['created'], horizon), 0.5),
                                      _ROW - 2))
        for a, b in s['hibernations']:
            out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" '
                       'fill="#bbb"><title>hibernated %s-%s</title>'
                       '</rect>' % (_x(a, horizon), y,
                                    max(_x(b, horizon) - _x(a, horizon),
                                        0.5), _ROW - 2, _t(a), _t(b)))
    for seg in report['segments']:
        if seg['server'] not in index:
            continue
        s = rows[index[seg['server']]]
        colour = _COLOURS.get(s['market'], '#888')
        opacity = '1' if seg['outcome'] == 'done' else '0.35'
        out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" '
                   'fill="%s" fill-opacity="%s" stroke="white" '
                   'stroke-width="0.5"><title>%s</title></rect>'
                   % (_x(seg['start'], horizon), top(seg['server']) + 2,
                      max(_x(seg['end'], horizon)
                          - _x(seg['start'], horizon), 0.5),
                      _ROW - 6, colour, opacity,
                      _esc('task %s %s-%s (%s)' % (
                          seg['task'], _t(seg['start']), _t(seg['end']),
                          'done' if seg['outcome'] == 'done'
                          else 'cut short, moved'))))
    out.extend(_time_lines(report, horizon, bottom))
    for s, t, what in _preemption_hits(rows):
        x, y = _x(t, horizon), top(s['server'])
        # A downward triangle over the row: where and when it was hit.
        out.append('<path class="preemption" d="M%.1f,%d L%.1f,%d '
                   'L%.1f,%d z" fill="%s"><title>%s</title></path>'
                   % (x - 5, y - 1, x + 5, y - 1, x, y + 7, _PREEMPT,
                      _esc('preemption at %s: %s %s %s'
                           % (_t(t), s['key'], s['server'], what))))
    for task, seg, nxt in _moves(report):
        if seg['server'] not in index:
            continue
        x1 = _x(seg['end'], horizon)
        y1 = top(seg['server']) + _ROW / 2 - 1
        if nxt is not None and nxt['server'] in index:
            x2 = _x(nxt['start'], horizon)
            y2 = top(nxt['server']) + _ROW / 2 - 1
            where = '%s to %s, restarted at %s' % (
                seg['server'], nxt['server'], _t(nxt['start']))
        else:
            x2, y2 = x1, y1
            where = 'off %s' % seg['server']
        title = _esc('task %s moved at %s: %s' % (task, _t(seg['end']),
                                                  where))
        out.append('<g class="migration"><title>%s</title>'
                   '<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>'
                   % (title, x1, y1, _MOVE))
        if (x2, y2) != (x1, y1):
            out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" '
                       'stroke="%s" stroke-width="1.2" '
                       'stroke-opacity="0.8" marker-end="url(#opie-arrow)"/>'
                       % (x1, y1, x2, y2, _MOVE))
        out.append('</g>')
    out.extend(_axis(horizon, height - 8))
    out.append('</svg>')
    return '\n'.join(out)


def _legend(moved, queued):
    items = [
        ('<span class="sw" style="background:%s"></span> preemptible'
         % _COLOURS['preemptible']),
        ('<span class="sw" style="background:%s"></span> normal'
         % _COLOURS['normal']),
        ('<span class="sw" style="background:%s;opacity:.35"></span> run '
         'cut short, then moved' % _COLOURS['preemptible']),
        '<span class="sw" style="background:#bbb"></span> hibernated',
        '<span class="sw" style="background:#eee"></span> server up, idle',
        ('<span style="color:%s">&#9660;</span> preemption'
         % _PREEMPT),
        ('<span style="color:%s">&#9679;&#8594;</span> running task moved '
         'to another server' % _MOVE),
        ('<span style="color:%s">- -</span> deadline, '
         '<span style="color:#777">- -</span> Dspot (the planner\'s '
         'deadline for preemptible servers)' % _PREEMPT),
    ]
    note = ''
    if queued:
        note = ('<br><span class="muted">%d of the %d migrations moved '
                'tasks still waiting in a queue; they have no run to draw '
                'an arrow from.</span>' % (queued, moved + queued))
    return ('<p class="legend">%s%s</p>'
            % (''.join('<span class="item">%s</span>' % i for i in items),
               note))


def _cost_chart(report, horizon):
    curve = report['cost_curve']
    base = report['result']['baseline_cost']
    top = max([c for _, c in curve] + [base or 0.0]) or 1.0
    height = 190
    plot_top, plot_bottom = 14, height - _AXIS - 8

    def y(c):
        return plot_bottom - (plot_bottom - plot_top) * c / top

    points = ' '.join('%.1f,%.1f' % (_x(t, horizon), y(c))
                      for t, c in curve)
    out = [_svg(height, 'cost over time'),
           '<polyline fill="none" stroke="%s" stroke-width="2" '
           'points="%s"/>' % (_COLOURS['preemptible'], points),
           '<text x="%d" y="%.1f" text-anchor="end">$%.3f</text>'
           % (_LEFT - 6, y(top) + 4, top),
           '<text x="%d" y="%.1f" text-anchor="end">$0</text>'
           % (_LEFT - 6, y(0) + 4)]
    if base:
        out.append('<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" '
                   'stroke="%s" stroke-dasharray="4 3"/>'
                   '<text x="%d" y="%.1f" fill="%s">'
                   'normal-only baseline $%.3f</text>'
                   % (_LEFT, _x(horizon, horizon), y(base), y(base),
                      _COLOURS['normal'], _LEFT + 4, y(base) - 3,
                      _COLOURS['normal'], base))
    if curve:
        # The final cost at the curve's end, to read against the baseline.
        t, c = curve[-1]
        out.append('<text x="%.1f" y="%.1f" text-anchor="end" fill="%s">'
                   'run $%.3f</text>' % (_x(t, horizon) - 4, y(c) + 14,
                                         _COLOURS['preemptible'], c))
    deadline = report['job']['deadline_s']
    if deadline <= horizon:
        out.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%.1f" '
                   'stroke="%s" stroke-dasharray="4 3"/>'
                   % (_x(deadline, horizon), _x(deadline, horizon),
                      plot_top, plot_bottom, _PREEMPT))
    out.extend(_axis(horizon, height - 8))
    out.append('</svg>')
    return '\n'.join(out)


def _headline(report, moved):
    """The story, in sentences: deadline, cost, preemptions, moves."""
    job, res, counts = report['job'], report['result'], report['counts']
    deadline = job['deadline_s']
    makespan = res['makespan_s']
    if makespan is None:
        verdict = ('<p class="missed"><strong>The job did not finish'
                   '</strong> (deadline %s).</p>' % _t(deadline))
    elif res['deadline_met']:
        verdict = ('<p class="met"><strong>Deadline met</strong>: '
                   'finished in %s, %s before the %s deadline.</p>'
                   % (_t(makespan), _t(deadline - makespan), _t(deadline)))
    else:
        verdict = ('<p class="missed"><strong>Deadline missed by %s'
                   '</strong>: finished in %s, deadline %s.</p>'
                   % (_t(makespan - deadline), _t(makespan), _t(deadline)))
    split = ('preemptible $%.4f, normal $%.4f'
             % (res['cost_preemptible'], res['cost_normal']))
    base = res['baseline_cost']
    if base:
        diff = base - res['cost']
        cost = ('<p><strong>Cost $%.4f</strong> (%s): $%.4f (%.1f %%) %s '
                'than the same plan on normal servers only ($%.4f).</p>'
                % (res['cost'], split, abs(diff), 100 * abs(diff) / base,
                   'less' if diff >= 0 else 'more', base))
    else:
        cost = ('<p><strong>Cost $%.4f</strong> (%s); no normal-only '
                'baseline in this report.</p>' % (res['cost'], split))
    hits = []
    for key, word in (('servers_hibernated', 'hibernation'),
                      ('servers_terminated', 'termination')):
        n = counts.get(key, 0)
        if n:
            hits.append('%d server %s%s' % (n, word, '' if n == 1 else 's'))
    n = counts.get('preemption_events', 0)
    if n:
        preempt = ('%d preemption%s (%s, &#9660; on the chart)'
                   % (n, '' if n == 1 else 's', ', '.join(hits) or
                      'no server hit'))
    else:
        preempt = 'no preemption'
    n = counts.get('migrations', 0)
    if n:
        migrate = ('%d task migration%s (%d of a running task, drawn as '
                   'arrows)' % (n, '' if n == 1 else 's', moved))
    else:
        migrate = 'no task migration'
    story = '<p>%s; %s.</p>' % (preempt[0].upper() + preempt[1:], migrate)
    return '<section class="headline">%s%s%s%s</section>' % (
        verdict, cost, story, _run_line(report))


def _run_line(report):
    """How the run was made; parameters a run does not have (kh, kr and
    seed on a real cloud) are left out rather than printed as None."""
    run = report['run']
    parts = ['%d tasks' % report['job']['tasks']]
    if run.get('mode') is not None:
        parts.append('mode %s' % run['mode'])
    params = ' '.join('%s=%s' % (k, _num(run[k]))
                      for k in ('kh', 'kr', 'seed')
                      if run.get(k) is not None)
    if params:
        parts.append(params)
    return '<p class="muted">%s</p>' % _esc(', '.join(parts))


def _rows(pairs):
    return '\n'.join('<tr><th>%s</th><td>%s</td></tr>' % (_esc(k), _esc(v))
                     for k, v in pairs)


def _plan_details(report):
    plan = report['plan']

    def mix(m):
        return ', '.join('%d %s' % (n, f) for f, n in sorted(m.items())) \
            or 'none'

    pairs = [('Dspot', _t(plan['dspot_s'])),
             ('preemptible servers', mix(plan['preemptible'])),
             ('normal servers', mix(plan['normal'])),
             ('expected makespan', _t(plan['expected_makespan_s'])),
             ('expected cost', '$%.4f' % plan['expected_cost'])]
    pairs += [('risk', r) for r in plan['risks']]
    return ('<details><summary>The plan</summary><p class="muted">What '
            'the planner expected before any preemption; Dspot is the '
            'reduced deadline the preemptible servers were planned for.'
            '</p><table>%s</table></details>' % _rows(pairs))


def _counter_value(value):
    if isinstance(value, dict):
        return ', '.join('%s %s' % (k, v) for k, v in sorted(value.items())) \
            or 'none'
    return value


def _counter_details(report):
    counts = report['counts']
    known = {key for key, _, _ in _COUNTERS}
    lines = [(name, counts[key], why) for key, name, why in _COUNTERS
             if key in counts]
    # A counter added after this page was written still shows, unexplained.
    lines += [(key.replace('_', ' '), counts[key], '')
              for key in counts if key not in known]
    body = '\n'.join('<tr><th>%s</th><td>%s</td><td class="muted">%s</td>'
                     '</tr>' % (_esc(name), _esc(_counter_value(value)),
                                _esc(why))
                     for name, value, why in lines)
    return ('<details><summary>All counters</summary><p class="muted">'
            'The scheduler\'s own figures, in the terms of the HADS paper, '
            'each with what it means.</p><table>%s</table></details>'
            % body)


def _billing_details(report):
    acc = report['accounting']

    def yes(v):
        return 'not read (a real cloud)' if v is None else \
            'yes' if v else 'NO'

    pairs = [('cost = billed seconds x price',
              yes(acc['cost_is_sum_of_billed_seconds_times_price'])),
             ('matches the cloud\'s bill', yes(acc['matches_cloud_bill']))]
    if acc['cloud_bill'] is not None:
        pairs.append(('cloud bill', '$%.4f' % acc['cloud_bill']))
    return ('<details><summary>Billing check</summary><p class="muted">'
            'Billing is per second, rounded up per server, from create to '
            'delete or preemption; hibernated time is free.</p>'
            '<table>%s</table></details>' % _rows(pairs))


def render(report):
    res = report['result']
    horizon = max([report['job']['deadline_s'], res['makespan_s'] or 0.0]
                  + [s['ended'] or 0.0 for s in report['servers']]
                  + [seg['end'] for seg in report['segments']]) * 1.02
    moved = len(_moves(report))
    queued = max(0, report['counts'].get('migrations', 0) - moved)
    misses = ''.join('<li>%s</li>' % _esc(m) for m in report['misses'])
    name = _esc(report['job']['name'])
    return ('<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width">'
            '<title>opie-bot: %s</title><style>%s</style></head><body>\n'
            '<h1>opie-bot run: %s</h1>\n%s\n%s'
            '<h2>Tasks on servers</h2>\n%s\n%s\n'
            '<h2>Cost over time</h2>\n%s\n'
            '<h2>Details</h2>\n%s\n%s\n%s\n</body></html>\n'
            % (name, _STYLE, name, _headline(report, moved),
               '<h2>Why it was late</h2><ul>%s</ul>\n' % misses
               if misses else '', _legend(moved, queued),
               _gantt(report, horizon), _cost_chart(report, horizon),
               _plan_details(report), _counter_details(report),
               _billing_details(report)))
