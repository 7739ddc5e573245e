"""What resize, cold migrate, confirmResize and revertResize read and
change in the server's cell before they cast: the migration waiting for
a confirm or a revert, and its status taken with the task."""

from nimbus.common.objects import migration as migration_obj
from nimbus.db import cell_migrations
from nimbus.db import cell_services


def finished_migration(cells, record):
    """The server's resize or cold migration waiting in ``finished`` (a
    Migration), or None."""
    with cells.db(record['cell']).session() as session:
        row = cell_migrations.in_progress(
            session,
            record['uuid'],
            [migration_obj.RESIZE, migration_obj.MIGRATION],
        )
    if row is None or row['status'] != 'finished':
        return None
    return migration_obj.Migration.from_row(row)


def take_migration(migration_uuid, status):
    """The ``then`` of the task's swap: the migration from ``finished`` to
    ``status`` in the same transaction (raises Conflict when another
    request took it first)."""

    def apply(session):
        if not cell_migrations.set_status(
            session, migration_uuid, status, expected=['finished']
        ):
            raise Conflict(
                'Migration %s is no longer finished.' % migration_uuid
            )

    return apply


class Conflict(Exception):
    pass


def compute_exists(cells, cell, host):
    """A nova-compute service named ``host`` in the server's cell."""
    with cells.db(cell).session() as session:
        return (
            cell_services.by_host_binary(session, host, 'nimbus-compute')
            is not None
        )
