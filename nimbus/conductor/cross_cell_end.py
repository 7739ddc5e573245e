"""The end of a resize or cold migrate that carried the server to another
cell (:mod:`.cross_cell_resize`): its confirm and its revert, driven by
the super conductor (conductor RPC 1.11, cast by the compute API, which
took the task and the migration's status in the target cell).

- :func:`confirm`: the source drops the old guest
  (``confirm_snapshot_based_resize_at_source``); the source cell's hidden
  copy of the instance (faults, actions) is deleted, its migration kept
  hidden and ``confirmed``; the migration's allocation (the source's) is
  dropped, the source's ARQs deleted (:mod:`.cross_cell_arqs`); the server ACTIVE (or SHUTOFF) in the target cell.
- :func:`revert`: the destination drops the new guest
  (``revert_snapshot_based_resize_at_dest``) and its ARQs are deleted;
  the source cell's copy
  shows again (with the actions the target cell recorded), the instance
  mapping points back at it, the target cell's copy and migration are
  deleted; the source powers the guest on
  (``finish_revert_snapshot_based_resize_at_source``; a stopped server
  stays off); the source's allocation goes back to the instance,
  replacing the destination's; migration ``reverted``.

A compute that refuses the first step leaves the server as it was
(VERIFY_RESIZE, migration ``finished``) with a fault, so the user may
try again.
"""

import traceback

from oslo_log import log as logging

from nimbus.common import instance_states as states
from nimbus.conductor import cross_cell_arqs
from nimbus.conductor import cross_cell_resize as moves
from nimbus.db import cell_instances as instances
from nimbus.db import cell_migrations
from nimbus.db import instance_actions

LOG = logging.getLogger(__name__)


def _load(conductor, cell_uuid, migration_uuid, status):
    """``(target cell, source cell, migration)`` or None when the move is
    not waiting for this end."""
    target = conductor.cells.by_uuid(cell_uuid)
    with conductor.cells.db(target).session() as session:
        migration = cell_migrations.get(session, migration_uuid)
    if (
        migration is None
        or not migration['cross_cell_move']
        or migration['status'] != status
    ):
        LOG.info(
            'Migration %s is not a cross-cell move in %s: left as it is',
            migration_uuid,
            status,
        )
        return None
    source = conductor.cells.by_uuid(migration['details']['source_cell_uuid'])
    return target, source, migration


def _give_back(steps, cell, migration, status, task, exc):
    """The first step was refused: VERIFY_RESIZE again (migration
    ``finished``), a fault, the action in error."""
    with steps.db(cell).session() as session:
        cell_migrations.set_status(
            session, migration['uuid'], 'finished', expected=[status]
        )
        instances.transition(
            session,
            steps.uuid,
            [states.RESIZED],
            {
                'task_state': None,
                'fault': {
                    'message': str(exc)[:255],
                    'details': ''.join(traceback.format_exception(exc)),
                    'code': 500,
                },
            },
            expected_task_states=[task],
        )
        instance_actions.finish(
            session, steps.uuid, steps.request_id, instance_actions.ERROR
        )


def confirm(
    conductor, ctxt, instance_uuid, cell_uuid, request_id, migration_uuid
):
    loaded = _load(conductor, cell_uuid, migration_uuid, 'confirming')
    if loaded is None:
        return
    target, source, migration = loaded
    steps = moves.Steps(conductor, ctxt, instance_uuid, request_id)
    try:
        steps.compute(
            target,
            migration['source_compute'],
            moves.CONFIRM_SOURCE,
            conductor.compute_api(
                source
            ).confirm_snapshot_based_resize_at_source,
            migration,
        )
    except moves.MoveFailed as exc:
        _give_back(
            steps,
            target,
            migration,
            'confirming',
            states.RESIZE_CONFIRMING,
            exc,
        )
        return
    cross_cell_arqs.confirm(conductor, ctxt, migration)
    steps.drop_copy(source)
    with steps.db(source).session() as session:
        cell_migrations.set_status(session, migration_uuid, 'confirmed')
    steps.claims.confirm(ctxt, migration_uuid)
    stopped = moves.was_stopped(migration)
    steps.step(
        target,
        migration_uuid,
        ['confirming'],
        'confirmed',
        [states.RESIZED],
        [states.RESIZE_CONFIRMING],
        {
            'vm_state': states.STOPPED if stopped else states.ACTIVE,
            'task_state': None,
        },
    )
    with steps.db(target).session() as session:
        instance_actions.finish(session, instance_uuid, request_id)


def revert(
    conductor, ctxt, instance_uuid, cell_uuid, request_id, migration_uuid
):
    loaded = _load(conductor, cell_uuid, migration_uuid, 'reverting')
    if loaded is None:
        return
    target, source, migration = loaded
    steps = moves.Steps(conductor, ctxt, instance_uuid, request_id)
    apis = conductor.compute_api
    try:
        steps.compute(
            target,
            migration['dest_compute'],
            moves.REVERT_DEST,
            apis(target).revert_snapshot_based_resize_at_dest,
            migration,
        )
    except moves.MoveFailed as exc:
        _give_back(
            steps, target, migration, 'reverting', states.RESIZE_REVERTING, exc
        )
        return
    cross_cell_arqs.revert(conductor, ctxt, migration)
    # The source cell owns the server again: the target's copy hidden
    # first, so that no list shows the server twice.
    steps.carry_actions(target, source)
    with steps.db(target).session() as session:
        instances.transition(
            session,
            instance_uuid,
            [states.RESIZED],
            {'hidden': True},
            expected_task_states=[states.RESIZE_REVERTING],
        )
    steps.step(
        source,
        migration_uuid,
        ['finished'],
        'reverting',
        [states.RESIZED],
        [None],
        {'task_state': states.RESIZE_REVERTING, 'hidden': False},
        {'hidden': False},
    )
    steps.map_to(source)
    steps.drop_copy(target, migration_uuid)
    stopped = moves.was_stopped(migration)
    power = states.SHUTDOWN if stopped else states.RUNNING
    end = {
        'vm_state': states.STOPPED if stopped else states.ACTIVE,
        'task_state': None,
        'power_state': power,
    }
    status = 'reverted'
    try:
        steps.compute(
            source,
            migration['source_compute'],
            moves.FINISH_REVERT_SOURCE,
            apis(source).finish_revert_snapshot_based_resize_at_source,
            migration,
        )
    except moves.MoveFailed as exc:
        # As Nova: the guest could not come back; the server shows ERROR
        # on its source (its allocation is back all the same).
        status = 'error'
        end = {
            'vm_state': states.ERROR,
            'task_state': None,
            'fault': {'message': str(exc)[:255], 'code': 500},
        }
    steps.claims.undo(ctxt, instance_uuid, migration_uuid)
    steps.step(
        source,
        migration_uuid,
        ['reverting'],
        status,
        [states.RESIZED],
        [states.RESIZE_REVERTING],
        end,
    )
    with steps.db(source).session() as session:
        instance_actions.finish(
            session,
            instance_uuid,
            request_id,
            None if status == 'reverted' else instance_actions.ERROR,
        )
