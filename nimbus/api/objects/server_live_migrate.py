"""What os-migrateLive and /servers/{id}/migrations read and change in the
server's cell: the live migration made with the task (one transaction),
given back when the cast cannot be sent; a server's live migrations; the
instance actions of an abort and a force complete."""

from nimbus.common import instance_states as states
from nimbus.common.objects import migration as migration_obj
from nimbus.db import cell_instances as instances
from nimbus.db import cell_migrations
from nimbus.db import instance_actions

LIVE = migration_obj.LIVE_MIGRATION


def make_migration(record, ctx, host, block_migration, made):
    """The ``then`` of the task's swap: the migration (type
    live-migration, ``accepted``, the requested host as ``dest_host``)
    in the same transaction; its dict is appended to ``made``."""

    def apply(session):
        made.append(
            cell_migrations.create(
                session,
                {
                    'instance_uuid': record['uuid'],
                    'migration_type': LIVE,
                    'status': 'accepted',
                    'source_compute': record.get('host'),
                    'source_node': record.get('node'),
                    'dest_host': host,
                    'dest_compute': host,
                    'old_flavor': record.get('flavor'),
                    'new_flavor': record.get('flavor'),
                    'user_id': ctx.user_id,
                    'project_id': record.get('project_id'),
                    'details': {
                        'vm_state': record.get('vm_state'),
                        'block_migration': block_migration,
                        'request_id': ctx.request_id,
                    },
                },
            )
        )

    return apply


def give_back(cells, record, migration_uuid, ctx):
    """The cast could not be sent: migration ``error``, the task cleared,
    the instance action in error."""
    with cells.db(record['cell']).session() as session:
        cell_migrations.set_status(
            session, migration_uuid, 'error', expected=['accepted']
        )
        instances.transition(
            session,
            record['uuid'],
            [states.ACTIVE, states.PAUSED],
            {'task_state': None},
            expected_task_states=[states.MIGRATING],
        )
        instance_actions.finish(
            session, record['uuid'], ctx.request_id, instance_actions.ERROR
        )


def in_progress(cells, record):
    """The server's live migrations in progress (dicts), oldest first."""
    with cells.db(record['cell']).session() as session:
        return cell_migrations.for_instance(
            session, record['uuid'], only_in_progress=True, types=[LIVE]
        )


def of_server(cells, record, migration_id):
    """The server's migration with the integer ``migration_id`` (any type
    and status; a dict), or None."""
    with cells.db(record['cell']).session() as session:
        rows = cell_migrations.for_instance(session, record['uuid'])
    for row in rows:
        if row['id'] == migration_id:
            return row
    return None


def start_action(cells, record, name, ctx):
    """Start the instance action ``name`` (live_migration_cancel,
    live_migration_force_complete) for the request."""
    with cells.db(record['cell']).session() as session:
        instance_actions.start(
            session,
            record['uuid'],
            name,
            ctx.request_id,
            ctx.user_id,
            ctx.project_id,
        )


def finish_action(cells, record, ctx, message=None):
    with cells.db(record['cell']).session() as session:
        instance_actions.finish(
            session, record['uuid'], ctx.request_id, message
        )
