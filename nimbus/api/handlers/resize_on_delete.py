"""The delete of a server in VERIFY_RESIZE after a resize or cold migrate
that carried it to another cell: as Nova, the move is confirmed first.

Its source cell still holds a hidden copy of the instance, the old guest
on the source host and the source's allocation on the migration's
consumer; none of these is the target cell's compute's to free. So the
API takes the confirm as a user's ``confirmResize`` would (task
``resize_confirming``, migration ``confirming``, action
``confirmResize``) and waits for the super conductor's confirm (conductor
RPC 1.12, a call: :func:`nimbus.conductor.cross_cell_end.confirm`); the
server, ACTIVE (or SHUTOFF) in the target cell, is then deleted as any
other. A super conductor older than 1.12, or a confirm that fails, leaves
the delete to go on as before: what the source keeps is the audit's.
"""

from oslo_log import log as logging

from nimbus.api import util
from nimbus.api.objects import server_actions as action_obj
from nimbus.api.objects import server_resize as resize_obj
from nimbus.common import instance_states as states

LOG = logging.getLogger(__name__)


def confirm_first(req, record):
    """Confirm the cross-cell move ``record`` (the server's record) waits
    in, if any; True when a confirm was run (the caller reads the record
    again)."""
    if (
        record.get('vm_state') != states.RESIZED
        or record.get('task_state') is not None
        or record.get('cell') is None
    ):
        return False
    deps = util.deps(req)
    migration = resize_obj.finished_migration(deps.cells, record)
    if migration is None or not migration.cross_cell_move:
        return False
    if not deps.conductor_api.takes_cross_cell_deletes():
        LOG.warning(
            'Deleting %s in VERIFY_RESIZE without confirming its cross-cell '
            'move (the super conductor predates conductor RPC 1.12): its '
            'source cell keeps a copy for the audit',
            record['uuid'],
        )
        return False
    ctx = util.ctx(req)
    try:
        action_obj.begin(
            deps.cells,
            record,
            'confirmResize',
            ctx,
            'confirmResize',
            'confirmResize',
            resize_obj.take_migration(migration.uuid, 'confirming'),
        )
    except (action_obj.InvalidState, action_obj.Gone, resize_obj.Conflict):
        # A confirm or revert took it meanwhile: the delete goes on.
        return False
    try:
        deps.conductor_api.confirm_cross_cell_resize(
            ctx,
            record['uuid'],
            record['cell'].uuid,
            ctx.request_id,
            migration.uuid,
            wait=True,
        )
    except Exception:  # noqa: BLE001 - the user's delete is never lost
        LOG.exception(
            'Could not confirm the cross-cell move of %s before its delete',
            record['uuid'],
        )
    return True
