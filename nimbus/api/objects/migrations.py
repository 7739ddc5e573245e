"""The migrations of every cell, for ``GET /os-migrations``: each cell's
``migrations`` rows (:mod:`nimbus.db.cell_migrations`), merged newest
first. A cell that does not answer is left out (logged), as the servers
list does."""

from oslo_log import log as logging

from nimbus.db import cell_migrations

LOG = logging.getLogger(__name__)


class MarkerNotFound(LookupError):
    pass


def marker(cells, migration_uuid):
    """The ordering key of the marker migration, in whichever cell."""
    for cell in cells.cells(include_cell0=False):
        with cells.db(cell).session() as session:
            found = cell_migrations.marker_of(session, migration_uuid)
        if found is not None:
            return found
    raise MarkerNotFound(migration_uuid)


def listing(cells, filters, limit=None, marker_uuid=None):
    """``(migrations, more)``: at most ``limit`` migrations of every cell
    matching ``filters``, newest first, after ``marker_uuid``; ``more``
    when another page follows. Each dict carries its ``cell``."""
    before = marker(cells, marker_uuid) if marker_uuid else None
    rows = []
    per_cell = None if limit is None else limit + 1
    for cell in cells.cells(include_cell0=False):
        try:
            with cells.db(cell).session() as session:
                found = cell_migrations.listing(
                    session, filters, limit=per_cell, before=before
                )
        except Exception as exc:  # noqa: BLE001 - a cell that is down: left out
            LOG.warning(
                'Cell %s is unreachable (%s); its migrations are left out',
                cell.name,
                exc,
            )
            continue
        for row in found:
            row['cell'] = cell
        rows.extend(found)
    rows.sort(key=cell_migrations.order_key, reverse=True)
    if limit is None:
        return rows, False
    return rows[:limit], len(rows) > limit
