"""The super conductor's recovery of a move left waiting for its
scheduling (issue 24, section 3), called by its recovery pass
(:mod:`nimbus.conductor.recovery`) for the audit's ``stuck_move``.

A resize or cold migrate the API accepted sits in ``resize_prep`` until
the super conductor's ``migrate_server`` has scheduled it and a
destination has taken its prep. A super conductor killed while it
scheduled (its cast was taken, so it is gone from the broker), or a
destination killed with the prep it had taken, leaves it there. Past
``[conductor] build_request_timeout`` it is undone, as a move the
scheduler could not place:

1. its migration (if it was made) goes from ``pre-migrating`` to
   ``error`` by compare-and-swap: a prep or ``resize_instance`` that
   arrives later finds its step gone and changes nothing (and claims no
   alternate);
2. placement as before the move (:meth:`MoveClaims.undo`: the source's
   allocation back to the instance, its destination claim replaced in the
   same transaction; nothing to do when the allocation never moved), and
   the destination's ARQs deleted (:mod:`.dest_arqs`: a destination
   killed in its prep may have bound some, recorded or not);
3. the task cleared with a fault saying why: the server is ACTIVE (or
   SHUTOFF) on its source.

A migration already past ``pre-migrating`` belongs to its computes (their
restart recovery, :mod:`nimbus.compute.move_restart`) and is left alone.

A live migration waits the same way in ``migrating`` with its migration
``accepted`` until the super conductor's ``live_migrate_instance`` has
checked a destination and cast to the source; it is undone the same way
from ``accepted`` (once ``queued``, the source has it and its restart
recovery, :func:`nimbus.compute.live_migration.recover`, rolls it back).
"""

from oslo_log import log as logging

from nimbus.common import instance_states as states
from nimbus.common.objects import migration as migration_obj
from nimbus.conductor import dest_arqs
from nimbus.conductor import move_claims
from nimbus.db import cell_instances as instances
from nimbus.db import cell_migrations

LOG = logging.getLogger(__name__)

KIND = 'stuck_move'
_COLD = [migration_obj.RESIZE, migration_obj.MIGRATION]
# The task a move waits in for its scheduling -> (the migration types,
# the status the migration waits in, the vm_states the server keeps).
WAITING = {
    states.RESIZE_PREP: (
        _COLD,
        'pre-migrating',
        [states.ACTIVE, states.STOPPED],
    ),
    states.MIGRATING: (
        [migration_obj.LIVE_MIGRATION],
        'accepted',
        [states.ACTIVE, states.PAUSED],
    ),
}


def _cell(conductor, name):
    for cell in conductor.cells.cells():
        if cell.name == name:
            return cell
    return None


def undo_stuck(conductor, ctxt, item, timeout):
    """Undo the move of ``item`` (a ``stuck_move`` Disagreement: the
    instance's uuid, its cell's name in ``where``; ``timeout`` the
    seconds it waited at least). True when it was
    undone; False when it had moved on meanwhile."""
    uuid = item.uuid
    cell = _cell(conductor, item.where)
    if cell is None:
        return False
    db = conductor.cells.db(cell)
    with db.session() as session:
        row = instances.get(session, uuid)
        if row is None or row.deleted or row.task_state not in WAITING:
            return False
        task = row.task_state
        accel_uuids = row.accel_uuids
        types, waiting, vm_states = WAITING[task]
        migration = cell_migrations.in_progress(session, uuid, types)
        if migration is not None and migration['cross_cell_move']:
            # Its copies in two cells: settled by
            # nimbus.conductor.cross_cell_recovery.
            return False
        if migration is not None and not cell_migrations.set_status(
            session, migration['uuid'], 'error', expected=[waiting]
        ):
            return False
    reason = (
        'The move was lost: no destination took it within %s s (a '
        'conductor or compute restarted while it was being scheduled); '
        'the server stays on its host' % timeout
    )
    if migration is not None:
        move_claims.MoveClaims(conductor.scheduler, conductor.placement).undo(
            ctxt, uuid, migration['uuid']
        )
        # A destination that died in its prep may have bound ARQs of the
        # new flavor, recorded or not; a prep still running finds its
        # step gone when it records them, and deletes its own.
        details = migration.get('details') or {}
        dest_arqs.undo(
            conductor,
            ctxt,
            uuid,
            migration.get('dest_compute'),
            details.get(dest_arqs.DEST) or [],
            set(accel_uuids or []) | set(details.get(dest_arqs.SOURCE) or []),
        )
    with db.session() as session:
        done = instances.transition(
            session,
            uuid,
            vm_states,
            {
                'task_state': None,
                'fault': {'message': reason[:255], 'code': 500},
            },
            expected_task_states=[task],
        )
    LOG.warning(
        'recovery: the move of %s (migration %s) %s: %s',
        uuid,
        migration['uuid'] if migration else 'none',
        'undone' if done is not None else 'undone in placement only',
        reason,
    )
    return done is not None
