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
   same transaction; nothing to do when the allocation never moved);
3. the task cleared with a fault saying why: the server is ACTIVE (or
   SHUTOFF) on its source.

A migration already past ``pre-migrating`` belongs to its computes (their
restart recovery, :mod:`nimbus.compute.move_restart`) and is left alone.
"""

from oslo_log import log as logging

from nimbus.common import instance_states as states
from nimbus.common.objects import migration as migration_obj
from nimbus.conductor import move_claims
from nimbus.db import cell_instances as instances
from nimbus.db import cell_migrations

LOG = logging.getLogger(__name__)

KIND = 'stuck_move'
_COLD = [migration_obj.RESIZE, migration_obj.MIGRATION]


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
        if row is None or row.deleted or row.task_state != states.RESIZE_PREP:
            return False
        migration = cell_migrations.in_progress(session, uuid, _COLD)
        if migration is not None and not cell_migrations.set_status(
            session, migration['uuid'], 'error', expected=['pre-migrating']
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
    with db.session() as session:
        done = instances.transition(
            session,
            uuid,
            [states.ACTIVE, states.STOPPED],
            {
                'task_state': None,
                'fault': {'message': reason[:255], 'code': 500},
            },
            expected_task_states=[states.RESIZE_PREP],
        )
    LOG.warning(
        'recovery: the move of %s (migration %s) %s: %s',
        uuid,
        migration['uuid'] if migration else 'none',
        'undone' if done is not None else 'undone in placement only',
        reason,
    )
    return done is not None
