"""A self-contained HTML page for a run report: summary, Gantt, cost.

No JavaScript and no third-party library: the charts are inline SVG, so
the page opens anywhere and can be attached to a ticket.
"""
import html

_W, _LEFT, _ROW = 900, 150, 16
_COLOURS = {'preemptible': '#4878a8', 'normal': '#d9822b'}


def _esc(value):
    return html.escape(str(value))


def _x(t, horizon):
    return _LEFT + (_W - _LEFT - 10) * t / horizon


def _gantt(report, horizon):
    rows = sorted(report['servers'], key=lambda s: (s['created'],
                                                    s['server']))
    index = {s['server']: i for i, s in enumerate(rows)}
    height = 40 + _ROW * len(rows)
    out = ['<svg width="%d" height="%d" role="img" '
           'aria-label="tasks on servers">' % (_W, height)]
    for s in rows:
        y = 20 + _ROW * index[s['server']]
        end = s['ended'] if s['ended'] is not None else horizon
        out.append('<text x="2" y="%d" font-size="10">%s %s</text>'
                   % (y + 11, _esc(s['key']), _esc(s['flavor'])))
        out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" '
                   'fill="#eee"/>' % (_x(s['created'], horizon), y,
                                      _x(end, horizon)
                                      - _x(s['created'], horizon), _ROW - 2))
        for a, b in s['hibernations']:
            out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" '
                       'fill="#bbb"><title>hibernated %.0f-%.0f s</title>'
                       '</rect>' % (_x(a, horizon), y, _x(b, horizon)
                                    - _x(a, horizon), _ROW - 2, a, b))
    for seg in report['segments']:
        s = rows[index[seg['server']]]
        y = 20 + _ROW * index[seg['server']] + 2
        colour = _COLOURS[s['market']]
        opacity = '1' if seg['outcome'] == 'done' else '0.35'
        out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" '
                   'fill="%s" fill-opacity="%s" stroke="white" '
                   'stroke-width="0.5"><title>%s %.0f-%.0f s (%s)</title>'
                   '</rect>' % (_x(seg['start'], horizon), y,
                                max(_x(seg['end'], horizon)
                                    - _x(seg['start'], horizon), 0.5),
                                _ROW - 6, colour, opacity,
                                _esc(seg['task']), seg['start'], seg['end'],
                                seg['outcome']))
    out.extend(_markers(report, horizon, height - 14))
    out.extend(_axis(horizon, height - 10))
    out.append('</svg>')
    return '\n'.join(out)


def _axis(horizon, y):
    """Tick marks every five minutes along ``y``."""
    out = []
    for t in range(0, int(horizon) + 1, 300):
        out.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" '
                   'stroke="#999"/><text x="%.1f" y="%d" font-size="9" '
                   'fill="#666">%d min</text>'
                   % (_x(t, horizon), _x(t, horizon), y - 4, y,
                      _x(t, horizon) + 2, y + 8, t // 60))
    return out


def _markers(report, horizon, height):
    marks = [('D', report['job']['deadline_s'], 'red'),
             ('Dspot', report['plan']['dspot_s'], 'grey')]
    out = []
    for label, t, colour in marks:
        if t <= horizon:
            out.append('<line x1="%.1f" x2="%.1f" y1="12" y2="%d" '
                       'stroke="%s" stroke-dasharray="4 3"/>'
                       % (_x(t, horizon), _x(t, horizon), height, colour))
            out.append('<text x="%.1f" y="10" font-size="10" fill="%s">%s'
                       '</text>' % (_x(t, horizon) - 8, colour, label))
    return out


def _cost_chart(report, horizon):
    curve = report['cost_curve']
    top = max([c for _, c in curve] +
              [report['result']['baseline_cost'] or 0.0]) or 1.0
    height = 175

    def y(c):
        return height - 20 - (height - 40) * c / top

    points = ' '.join('%.1f,%.1f' % (_x(t, horizon), y(c))
                      for t, c in curve)
    out = ['<svg width="%d" height="%d" role="img" '
           'aria-label="cost over time">' % (_W, height),
           '<polyline fill="none" stroke="#4878a8" stroke-width="2" '
           'points="%s"/>' % points,
           '<text x="2" y="%.1f" font-size="10">$%.3f</text>'
           % (y(top) + 4, top),
           '<text x="2" y="%.1f" font-size="10">$0</text>' % y(0)]
    out.extend(_axis(horizon, height - 12))
    base = report['result']['baseline_cost']
    if base:
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" '
                   'stroke="#d9822b" stroke-dasharray="4 3"/>'
                   '<text x="%d" y="%.1f" font-size="10" fill="#d9822b">'
                   'normal-only baseline $%.3f</text>'
                   % (_LEFT, _W - 10, y(base), y(base), _LEFT + 4,
                      y(base) - 3, base))
    out.append('</svg>')
    return '\n'.join(out)


def render(report):
    res = report['result']
    horizon = max([report['job']['deadline_s']]
                  + [s['ended'] or 0.0 for s in report['servers']]) * 1.02
    summary = [
        ('job', '%s (%d tasks)' % (report['job']['name'],
                                   report['job']['tasks'])),
        ('run', '%(mode)s, kh=%(kh)s kr=%(kr)s seed=%(seed)s'
         % report['run']),
        ('makespan', '%s s (deadline %.0f s, %s)' % (
            'n/a' if res['makespan_s'] is None
            else '%.0f' % res['makespan_s'], report['job']['deadline_s'],
            'met' if res['deadline_met'] else 'MISSED')),
        ('cost', '$%.4f (preemptible $%.4f, normal $%.4f)'
         % (res['cost'], res['cost_preemptible'], res['cost_normal'])),
    ]
    if res['baseline_cost']:
        summary.append(('normal-only baseline', '$%.4f, saving %.1f %%'
                        % (res['baseline_cost'], 100 * res['saving'])))
    summary += [(k.replace('_', ' '), v) for k, v in report['counts'].items()
                if not isinstance(v, dict)]
    table = '\n'.join('<tr><th>%s</th><td>%s</td></tr>'
                      % (_esc(k), _esc(v)) for k, v in summary)
    misses = ''.join('<li>%s</li>' % _esc(m) for m in report['misses'])
    return ('<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
            '<title>opie-bot: %s</title><style>body{font-family:sans-serif}'
            'th{text-align:left;padding-right:1em}</style></head><body>\n'
            '<h1>opie-bot run: %s</h1>\n<table>%s</table>\n%s'
            '<h2>Tasks on servers</h2>\n<p>Blue: preemptible, orange: normal,'
            ' pale: a run cut short by a preemption, grey: hibernated.</p>\n'
            '%s\n<h2>Cost over time</h2>\n%s\n</body></html>\n'
            % (_esc(report['job']['name']), _esc(report['job']['name']),
               table, '<h2>Deadline misses</h2><ul>%s</ul>' % misses
               if misses else '', _gantt(report, horizon),
               _cost_chart(report, horizon)))
