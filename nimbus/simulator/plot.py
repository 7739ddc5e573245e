"""``nimbus simulate --compare A B --plot DIR``: a PNG and an HTML page.

The PNG has two panels over simulated time: utilisation of each resource
class and the rejection rate, one line style per setting. The HTML page
embeds the PNG and a table of every sample of both runs. matplotlib comes
with the ``plot`` extra (``pip install nimbus[plot]``).
"""

import html
import os

MISSING = (
    'nimbus simulate --plot needs matplotlib: pip install '
    "'nimbus[plot]' (or pip install matplotlib)"
)
PNG = 'simulation.png'
PAGE = 'simulation.html'
STYLES = ('-', '--', ':', '-.')


def _pyplot():
    try:
        import matplotlib
    except ImportError as exc:
        raise RuntimeError(MISSING) from exc
    matplotlib.use('Agg')
    from matplotlib import pyplot

    return pyplot


def draw(results, path):
    """Write the PNG of ``results`` (name -> run) to ``path``: one column
    per setting, utilisation above, rejections below, shared axes."""
    pyplot = _pyplot()
    cols = max(len(results), 1)
    fig, axes = pyplot.subplots(
        2,
        cols,
        figsize=(6 * cols, 7),
        sharex=True,
        sharey='row',
        squeeze=False,
    )
    for col, (name, result) in enumerate(results.items()):
        util_ax, rej_ax = axes[0][col], axes[1][col]
        timeline = result['timeline']
        times = [s['t'] for s in timeline]
        classes = sorted({rc for s in timeline for rc in s['utilisation']})
        for style, rc in zip(STYLES * len(classes), classes, strict=False):
            util_ax.plot(
                times,
                [100 * s['utilisation'].get(rc, 0) for s in timeline],
                linestyle=style,
                label=rc,
            )
        rej_ax.plot(
            times,
            [100 * s['rejection_rate'] for s in timeline],
            color='firebrick',
        )
        util_ax.set_title(
            '%s: %d placed, %d rejected'
            % (name, result['placed'], result['rejected'])
        )
        util_ax.set_ylim(0, 100)
        util_ax.legend(fontsize='small')
        util_ax.grid(alpha=0.3)
        rej_ax.set_ylim(bottom=0)
        rej_ax.set_xlabel('simulated time (s)')
        rej_ax.grid(alpha=0.3)
    axes[0][0].set_ylabel('utilisation (%)')
    axes[1][0].set_ylabel('rejected in interval (%)')
    fig.tight_layout()
    fig.savefig(path, format='png', dpi=100)
    pyplot.close(fig)


def _table(name, result):
    timeline = result['timeline']
    classes = sorted({rc for s in timeline for rc in s['utilisation']})
    head = ''.join('<th>%s</th>' % html.escape(rc) for rc in classes)
    rows = []
    for s in timeline:
        cells = ''.join(
            '<td>%.1f%%</td>' % (100 * s['utilisation'].get(rc, 0))
            for rc in classes
        )
        rows.append(
            '<tr><td>%.1f</td>%s<td>%d</td><td>%d</td><td>%d</td>'
            '<td>%.1f%%</td></tr>'
            % (
                s['t'],
                cells,
                s['instances'],
                s['placed'],
                s['rejected'],
                100 * s['rejection_rate'],
            )
        )
    return (
        '<h2>%s: %d arrivals, %d placed, %d rejected</h2>\n'
        '<table><tr><th>t</th>%s<th>instances</th><th>placed</th>'
        '<th>rejected</th><th>rejected in interval</th></tr>\n%s\n'
        '</table>'
        % (
            html.escape(name),
            result['arrivals'],
            result['placed'],
            result['rejected'],
            head,
            '\n'.join(rows),
        )
    )


def write(results, directory):
    """Write ``simulation.png`` and ``simulation.html`` into ``directory``
    (created if needed); returns the two paths."""
    pyplot = _pyplot()
    del pyplot
    os.makedirs(directory, exist_ok=True)
    png = os.path.join(directory, PNG)
    page = os.path.join(directory, PAGE)
    draw(results, png)
    title = html.escape(' vs '.join(results))
    with open(page, 'w') as f:
        f.write(
            '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
            '<title>nimbus simulate: %s</title><style>'
            'body{font-family:sans-serif}table{border-collapse:collapse;'
            'margin-bottom:2em}td,th{border:1px solid #ccc;'
            'padding:2px 8px;text-align:right}.runs{display:flex;'
            'gap:2em;flex-wrap:wrap}</style></head><body>\n'
            '<h1>nimbus simulate: %s</h1>\n'
            '<img src="%s" alt="utilisation and rejections over time">\n'
            '<div class="runs">%s</div>\n</body></html>\n'
            % (
                title,
                title,
                PNG,
                '\n'.join(
                    '<div>%s</div>' % _table(n, r) for n, r in results.items()
                ),
            )
        )
    return png, page
