"""What resize, cold migrate, confirmResize and revertResize read and
change in the server's cell before they cast: the migration waiting for
a confirm or a revert, and its status taken with the task."""

from nimbus.common import instance_states as states
from nimbus.common.objects import migration as migration_obj
from nimbus.db import cell_instances as instances
from nimbus.db import cell_migrations
from nimbus.db import cell_services
from nimbus.db import cells as db_cells
from nimbus.db import instance_actions


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


def move_hosts(cells, record):
    """The source and destination of the server's resize, cold or live
    migration in progress, each with its cell: ``[(cell, host)]`` (empty
    without one). Its external events go to both, as Nova's, so the
    destination hears of the ARQs it binds while the server still shows
    its source; for a move to another cell (``cross_cell_move``) each
    host is reached in its own cell."""
    with cells.db(record['cell']).session() as session:
        row = cell_migrations.in_progress(
            session,
            record['uuid'],
            [
                migration_obj.RESIZE,
                migration_obj.MIGRATION,
                migration_obj.LIVE_MIGRATION,
            ],
        )
    if row is None:
        return []
    details = row.get('details') or {}
    out = []
    for host, key in (
        (row['source_compute'], 'source_cell_uuid'),
        (row['dest_compute'], 'target_cell_uuid'),
    ):
        if not host:
            continue
        cell = record['cell']
        if row.get('cross_cell_move') and details.get(key):
            try:
                cell = cells.by_uuid(details[key])
            except db_cells.CellNotFound:
                continue
        out.append((cell, host))
    return out


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


def give_back(cells, record, action_name, task, migration_uuid, status, ctx):
    """The cast of a confirm or revert could not be sent: the task and
    the migration's status go back (VERIFY_RESIZE, ``finished``) and the
    instance action ends in error."""
    with cells.db(record['cell']).session() as session:
        cell_migrations.set_status(
            session, migration_uuid, 'finished', expected=[status]
        )
        instances.transition(
            session,
            record['uuid'],
            [states.RESIZED],
            {'task_state': None},
            expected_task_states=[task],
        )
        instance_actions.finish(
            session, record['uuid'], ctx.request_id, instance_actions.ERROR
        )


class Conflict(Exception):
    pass


def compute_exists(cells, cell, host):
    """A nova-compute service named ``host`` in the server's cell."""
    with cells.db(cell).session() as session:
        return (
            cell_services.by_host_binary(session, host, 'nimbus-compute')
            is not None
        )
