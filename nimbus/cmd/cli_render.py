"""Rich rendering of scheduler dry runs for the ``nimbus`` CLI.

The input is the body of ``POST /v2.1/os-scheduler/dry-run`` (its ``dry_run``
member): ``placement_candidates``, ``placement_query``, ``pre_filters``,
``filters`` (``name``/``in``/``out``), ``ranked`` (per host ``weight`` and,
per weigher, ``raw``/``normalized``/``multiplier``/``weighted``),
``rejected`` (``host``/``filter``/``reason``) and ``message``, all for the
first instance; ``instances`` (N), ``placements`` (per instance that would
fit: ``host``, ``nodename``, ``compute_node_uuid``, ``cell_uuid``,
``alternates``), ``placed`` and, when fewer than N fit,
``placements_message``.
"""

from rich import box
from rich.console import Console
from rich.table import Table

from nimbus.cmd.cli_views import host_column


def _num(value):
    if isinstance(value, float):
        return '%.4g' % value
    return str(value)


def _funnel(console, result):
    console.print(
        'placement returned %s host(s)' % result.get('placement_candidates', 0)
    )
    if result.get('placement_query'):
        console.print(
            '  GET /allocation_candidates?%s' % result['placement_query'],
            style='dim',
        )
    steps = list(result.get('pre_filters') or []) + list(
        result.get('filters') or []
    )
    if steps:
        table = Table(title='Filters', box=box.SIMPLE)
        table.add_column('filter', overflow='fold')
        table.add_column('in', justify='right')
        table.add_column('out', justify='right')
        for step in steps:
            table.add_row(step['name'], str(step['in']), str(step['out']))
        console.print(table)


def _ranked(console, ranked):
    """Rank, host, weight, and per weigher (one line each, so the table
    fits 80 columns however many weighers there are) raw / normalised /
    weighted."""
    names = []
    for host in ranked:
        for name, values in (host.get('weighers') or {}).items():
            if name not in names and (
                values.get('multiplier') or values.get('weighted')
            ):
                names.append(name)
    table = Table(title='Ranked hosts', box=box.SIMPLE)
    table.add_column('#', justify='right')
    host_column(table, 'host', [h.get('host', '?') for h in ranked])
    table.add_column('weight', justify='right')
    if names:
        table.add_column('weighers (raw / norm / weighted)', overflow='fold')
    for index, host in enumerate(ranked, 1):
        lines = []
        for name in names:
            values = (host.get('weighers') or {}).get(name) or {}
            lines.append(
                '%s: %s / %.2f / %.2f'
                % (
                    name.replace('Weigher', ''),
                    _num(values.get('raw')),
                    values.get('normalized', 0.0),
                    values.get('weighted', 0.0),
                )
            )
        cells = [
            str(index),
            host.get('host', '?'),
            '%.3f' % host.get('weight', 0.0),
        ]
        if names:
            cells.append('\n'.join(lines))
        table.add_row(*cells)
    console.print(table)


def _rejected(console, rejected):
    table = Table(title='Rejected hosts', box=box.SIMPLE)
    host_column(table, 'host', [h.get('host', '?') for h in rejected])
    table.add_column('filter', overflow='fold')
    table.add_column('reason', overflow='fold')
    for host in rejected:
        table.add_row(
            host.get('host', '?'),
            host.get('filter', '?'),
            host.get('reason', ''),
        )
    console.print(table)


def _placements(console, result):
    """Where each of the N instances would go, and how many fit."""
    placements = result.get('placements') or []
    requested = result.get('instances') or len(placements)
    with_node = any(
        p.get('nodename') not in (None, p.get('host')) for p in placements
    )
    table = Table(
        title='Placements of %d instances' % requested, box=box.SIMPLE
    )
    table.add_column('#', justify='right')
    host_column(table, 'host', [p.get('host', '?') for p in placements])
    if with_node:
        table.add_column('node', overflow='fold')
    table.add_column('alternates', overflow='fold')
    for index, placement in enumerate(placements, 1):
        cells = [str(index), placement.get('host', '?')]
        if with_node:
            cells.append(placement.get('nodename') or '')
        cells.append(', '.join(placement.get('alternates') or []) or '-')
        table.add_row(*cells)
    if placements:
        console.print(table)
    if result.get('placements_message'):
        # "6 of 8 instances would be placed: <why the others would not>"
        console.print(result['placements_message'])
        console.print('Nothing was claimed.')
    else:
        console.print(
            '%d of %d instances would be placed (nothing was '
            'claimed).' % (result.get('placed', len(placements)), requested)
        )


def dry_run(result, console=None):
    console = console or Console()
    _funnel(console, result)
    ranked = result.get('ranked') or []
    if ranked:
        _ranked(console, ranked)
    if result.get('rejected'):
        _rejected(console, result['rejected'])
    if result.get('message'):
        console.print(result['message'])
    elif (result.get('instances') or 1) > 1:
        _placements(console, result)
    elif ranked:
        alternates = []
        for placement in (result.get('placements') or [])[:1]:
            alternates = placement.get('alternates') or []
        console.print(
            'Would choose %s%s (nothing was claimed).'
            % (
                ranked[0].get('host'),
                ', alternates %s' % ', '.join(alternates)
                if alternates
                else '',
            )
        )
