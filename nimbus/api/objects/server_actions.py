"""What the server actions change in a cell before the compute acts: the
action's task taken with a compare-and-swap and its instance action
started, in one transaction (:func:`begin`); the lock; os-resetState;
and the reads of os-instance-actions.

A swap that does not hold becomes :class:`InvalidState` with the state the
instance is in now, which the handlers answer with Nova's 409.
"""

from nimbus.common import instance_states as states
from nimbus.db import cell_instances
from nimbus.db.cell_instances import actions as instance_changes
from nimbus.db import cell_services
from nimbus.db import instance_actions
from nimbus.db import instance_mappings
from nimbus.db import server_groups


class InvalidState(Exception):
    """The instance is not in a state the action starts from."""

    def __init__(self, uuid, attr, state, action):
        super().__init__(
            "Cannot '%s' instance %s while it is in %s %s"
            % (action, uuid, attr, state)
        )


class Gone(Exception):
    """The instance was deleted meanwhile."""


def _refusal(session, uuid, action, api_name):
    row = cell_instances.get(session, uuid)
    if row is None or row.deleted:
        return Gone(uuid)
    if row.vm_state not in action.vm_states:
        return InvalidState(uuid, 'vm_state', row.vm_state, api_name)
    return InvalidState(uuid, 'task_state', row.task_state, api_name)


def begin(
    cells, record, action_name, ctx, recorded_as, api_name=None, then=None
):
    """Take the task of ``action_name`` (a key of
    :data:`nimbus.common.instance_states.ACTIONS`) on the server and start
    its instance action ``recorded_as`` for the request; raises
    :class:`InvalidState` or :class:`Gone` when the swap does not hold.
    ``then(session)``: more changes in the same transaction (a rebuild's
    new image and attributes)."""
    action = states.ACTIONS[action_name]
    uuid = record['uuid']
    with cells.db(record['cell']).session() as session:
        row = cell_instances.transition(
            session,
            uuid,
            list(action.vm_states),
            {'task_state': action.task},
            expected_host=record.get('host'),
            expected_task_states=list(action.task_states),
        )
        if row is None:
            raise _refusal(session, uuid, action, api_name or recorded_as)
        instance_actions.start(
            session,
            uuid,
            recorded_as,
            ctx.request_id,
            ctx.user_id,
            ctx.project_id,
        )
        if then is not None:
            then(session)
        return row


def rebuilt(uuid, image_ref, attributes):
    """The ``then`` of a rebuild's :func:`begin`: the new image and
    server attributes (``display_name`` and ``metadata`` among them)."""

    def apply(session):
        instance_changes.update_rebuilt(session, uuid, image_ref, attributes)

    return apply


def stamp_deleted_at(uuid):
    """The ``then`` of a soft delete's :func:`begin`: when it was
    soft-deleted (the reclaim counts from it)."""

    def apply(session):
        instance_changes.stamp_soft_deleted(session, uuid)

    return apply


def restored(api_db, record):
    """A soft-deleted server comes back: its mapping is no longer queued
    for delete and it is again a member of its server group (a delete
    took it out of both)."""
    with api_db.session() as session:
        instance_mappings.unqueue_for_delete(session, record['uuid'])
        group = record.get('instance_group_uuid')
        if group and server_groups.get(session, group) is not None:
            server_groups.remove_members(session, [record['uuid']])
            server_groups.add_members(session, group, [record['uuid']])


def host_node(cells, cell, host, nodename):
    """The compute node the server runs on (a dict of its columns), or
    None."""
    with cells.db(cell).session() as session:
        row = cell_services.node_of(session, host, nodename)
        return None if row is None else cell_services.node_as_dict(row)


def undo(cells, record, action_name, ctx):
    """Give the task back (the cast could not be sent) and end the
    instance action in error."""
    action = states.ACTIONS[action_name]
    with cells.db(record['cell']).session() as session:
        cell_instances.transition(
            session,
            record['uuid'],
            list(action.vm_states),
            {'task_state': None},
            expected_task_states=[action.task],
        )
        instance_actions.finish(
            session, record['uuid'], ctx.request_id, instance_actions.ERROR
        )


def record(cells, record, recorded_as, ctx, message=None):
    """An instance action done in the API alone (lock, unlock): started
    and finished at once."""
    with cells.db(record['cell']).session() as session:
        instance_actions.start(
            session,
            record['uuid'],
            recorded_as,
            ctx.request_id,
            ctx.user_id,
            ctx.project_id,
        )
        instance_actions.finish(
            session, record['uuid'], ctx.request_id, message
        )


def set_lock(cells, record, locked_by, reason, ctx):
    """Lock (``locked_by`` 'owner' or 'admin') or unlock (None) the
    server, recording the instance action; False when it is gone."""
    with cells.db(record['cell']).session() as session:
        if not instance_changes.set_lock(
            session, record['uuid'], locked_by, reason
        ):
            return False
        instance_actions.start(
            session,
            record['uuid'],
            'lock' if locked_by else 'unlock',
            ctx.request_id,
            ctx.user_id,
            ctx.project_id,
        )
        instance_actions.finish(session, record['uuid'], ctx.request_id)
        return True


def reset_state(cells, record, vm_state):
    """os-resetState: compare-and-swap from the state the server was read
    in to ``vm_state`` with no task; False when it changed meanwhile (or
    the table refuses the swap: a deleted server)."""
    with cells.db(record['cell']).session() as session:
        row = cell_instances.transition(
            session,
            record['uuid'],
            [record['vm_state']],
            {'vm_state': vm_state, 'task_state': None},
        )
        return row is not None


def list_actions(cells, cell, uuid, since=None, before=None):
    with cells.db(cell).session() as session:
        return instance_actions.list_for(session, uuid, since, before)


def get_action(cells, cell, uuid, request_id):
    with cells.db(cell).session() as session:
        return instance_actions.get(session, uuid, request_id)
