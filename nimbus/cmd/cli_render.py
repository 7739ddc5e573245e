"""Rich rendering of scheduler dry runs for the ``nimbus`` CLI."""

from rich import box
from rich.console import Console
from rich.table import Table


def dry_run(result, console=None):
    console = console or Console()
    ranked = result.get('ranked') or result.get('hosts') or []
    table = Table(title='Ranked hosts', box=box.SIMPLE)
    table.add_column('#')
    table.add_column('host')
    table.add_column('weight')
    table.add_column('weighers (raw / normalised / weighted)')
    for index, host in enumerate(ranked, 1):
        parts = []
        for name, values in sorted((host.get('weighers') or {}).items()):
            parts.append('%s %s/%.2f/%.2f' % (
                name, values.get('raw'), values.get('normalized', 0.0),
                values.get('weighted', 0.0)))
        table.add_row(str(index), host.get('host', '?'),
                      '%.3f' % host.get('weight', 0.0), '; '.join(parts))
    console.print(table)
    rejected = result.get('rejected') or []
    if rejected:
        table = Table(title='Rejected hosts', box=box.SIMPLE)
        table.add_column('host')
        table.add_column('filter')
        table.add_column('reason')
        for host in rejected:
            table.add_row(host.get('host', '?'), host.get('filter', '?'),
                          host.get('reason', ''))
        console.print(table)
    if result.get('summary'):
        console.print(result['summary'])
