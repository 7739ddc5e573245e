"""Usage of servers over a period (os-simple-tenant-usage), read from the
instances of every cell: a server counts from ``launched_at`` to
``terminated_at`` (or the end of the period), clipped to the period, as
Nova's simple tenant usage does. Servers that never launched count 0 hours.
"""

from oslo_log import log as logging

from nimbus.db.cell_instances import queries as instance_queries

LOG = logging.getLogger(__name__)


def hours_in(launched_at, terminated_at, start, stop):
    if launched_at is None:
        return 0.0
    if terminated_at is not None and terminated_at < start:
        return 0.0
    if launched_at > stop:
        return 0.0
    begin = max(launched_at, start)
    end = min(stop, terminated_at) if terminated_at else stop
    return max((end - begin).total_seconds(), 0) / 3600.0


def instances_in(cells, start, stop, project_id=None):
    """Instances of every cell alive at some point of [start, stop],
    oldest first, each a dict of what the usage needs."""
    rows = []
    for cell in cells.cells(include_cell0=True):
        try:
            with cells.db(cell).session() as session:
                for row in instance_queries.alive_between(
                    session, start, stop, project_id
                ):
                    rows.append(
                        {
                            'uuid': row.uuid,
                            'name': row.display_name or '',
                            'project_id': row.project_id,
                            'flavor': row.flavor or {},
                            'vm_state': row.vm_state,
                            'launched_at': row.launched_at,
                            'terminated_at': row.terminated_at,
                            'created_at': row.created_at,
                        }
                    )
        except Exception as exc:  # noqa: BLE001 - a cell that is down: left out
            LOG.warning(
                'Cell %s is unreachable (%s); its servers are left '
                'out of the usage',
                cell.name,
                exc,
            )
    rows.sort(key=lambda r: (r['created_at'], r['uuid']))
    return rows
