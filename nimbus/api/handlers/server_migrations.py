"""A server's live migrations, as Nova's v2.1 API serves them:

- ``GET /servers/{id}/migrations`` (2.23) and ``.../{migration_id}``: the
  server's live migrations in progress, with their progress
  (``memory_*_bytes``, ``disk_*_bytes``); ``uuid`` from 2.59,
  ``user_id``/``project_id`` from 2.80. Any other migration (a finished
  one, a resize) is a 404 here; ``GET /os-migrations``
  (:mod:`nimbus.api.handlers.migrations`) lists every migration;
- ``DELETE .../{migration_id}`` (2.24): abort a ``running`` live
  migration (from 2.65 also a ``queued`` or ``preparing`` one; another
  status is a 400); the source rolls it back and it ends ``cancelled``;
- ``POST .../{migration_id}/action {"force_complete": null}`` (2.22): a
  ``running`` live migration finishes its copy at once (400 otherwise).

All are admin only by default (``os_compute_api:servers:migrations:*``).
A server not migrating (task other than ``migrating``) or locked is a
409 for the abort and the force complete, as Nova; both are 202 and
recorded as the instance actions ``live_migration_cancel`` and
``live_migration_force_complete``.
"""

from oslo_log import log as logging

from nimbus.api import policies_server_moves_live as policies
from nimbus.api import util
from nimbus.api.handlers import action_steps
from nimbus.api.handlers import migrations
from nimbus.api.objects import server_live_migrate as live_obj
from nimbus.api.schemas import server_live_migrate as schema
from nimbus.common import instance_states as states
from nimbus.common.objects import migration as migration_types
from nimbus.common.wsgi import errors
from nimbus.common.wsgi import json_body

LOG = logging.getLogger(__name__)


def _since(req, version):
    if util.version(req) < version:
        raise errors.HTTPError(
            404, 'This resource needs microversion %d.%d or later.' % version
        )


def _migration_id(migration_id):
    try:
        return int(migration_id)
    except (TypeError, ValueError):
        return None


def view(req, migration):
    """One live migration as Nova's server migrations view shows it."""
    version = util.version(req)
    body = {
        'created_at': util.isotime(migration['created_at']),
        'dest_compute': migration['dest_compute'],
        'dest_host': migration['dest_host'],
        'dest_node': migration['dest_node'],
        'disk_processed_bytes': migration['disk_processed'],
        'disk_remaining_bytes': migration['disk_remaining'],
        'disk_total_bytes': migration['disk_total'],
        'id': migration['id'],
        'memory_processed_bytes': migration['memory_processed'],
        'memory_remaining_bytes': migration['memory_remaining'],
        'memory_total_bytes': migration['memory_total'],
        'server_uuid': migration['instance_uuid'],
        'source_compute': migration['source_compute'],
        'source_node': migration['source_node'],
        'status': migration['status'],
        'updated_at': util.isotime(migration['updated_at']),
    }
    return migrations.owner_fields(body, migration, version)


def _live_in_progress(req, record, migration_id):
    """The server's live migration ``migration_id`` in progress, or 404."""
    found = live_obj.of_server(
        util.deps(req).cells, record, _migration_id(migration_id)
    )
    if (
        found is None
        or found['migration_type'] != migration_types.LIVE_MIGRATION
        or found['status'] in migration_types.FINAL
    ):
        raise errors.HTTPError(
            404,
            'In-progress live migration %s is not found for server %s.'
            % (migration_id, record['uuid']),
        )
    return found


def index(req, resp, server_id):
    _since(req, (2, 23))
    record = action_steps.server_for(req, server_id, policies.MIGRATIONS_INDEX)
    if record['cell'] is None:
        resp.media = {'migrations': []}
        return
    rows = live_obj.in_progress(util.deps(req).cells, record)
    resp.media = {'migrations': [view(req, row) for row in rows]}


def show(req, resp, server_id, migration_id):
    _since(req, (2, 23))
    record = action_steps.server_for(req, server_id, policies.MIGRATIONS_SHOW)
    if record['cell'] is None:
        raise util.not_found('Migration', migration_id)
    resp.media = {
        'migration': view(req, _live_in_progress(req, record, migration_id))
    }


def _migrating(req, record, api_name):
    action_steps.check_lock(req, record)
    if record['cell'] is None or record.get('task_state') != states.MIGRATING:
        raise util.conflict(
            "Cannot '%s' instance %s while it is in task_state %s"
            % (api_name, record['uuid'], record.get('task_state'))
        )


def _signal(req, record, migration, action_name, cast_name):
    deps = util.deps(req)
    ctx = util.ctx(req)
    live_obj.start_action(deps.cells, record, action_name, ctx)
    try:
        getattr(deps.compute_api(record['cell']), cast_name)(
            ctx,
            migration['source_compute'],
            record['uuid'],
            ctx.request_id,
            migration['uuid'],
        )
    except Exception as exc:
        LOG.exception('Could not send %s of %s', cast_name, record['uuid'])
        live_obj.finish_action(deps.cells, record, ctx, 'Error')
        raise errors.HTTPError(
            503,
            'The compute host %s could not be told; try again.'
            % migration['source_compute'],
        ) from exc
    live_obj.finish_action(deps.cells, record, ctx)


def delete(req, resp, server_id, migration_id):
    _since(req, (2, 24))
    record = action_steps.server_for(
        req, server_id, policies.MIGRATIONS_DELETE
    )
    _migrating(req, record, 'abort live migration')
    migration = live_obj.of_server(
        util.deps(req).cells, record, _migration_id(migration_id)
    )
    if migration is None:
        raise util.not_found(
            'Migration %s for instance' % migration_id, record['uuid']
        )
    abortable = ['running']
    if util.version(req) >= (2, 65):
        abortable += ['queued', 'preparing']
    if (
        migration['migration_type'] != migration_types.LIVE_MIGRATION
        or migration['status'] not in abortable
    ):
        raise util.bad_request(
            'Migration %s state of instance %s is %s. Cannot abort live '
            'migration in that state (it must be %s).'
            % (
                migration_id,
                record['uuid'],
                migration['status'],
                ' or '.join(abortable),
            )
        )
    _signal(
        req, record, migration, 'live_migration_cancel', 'live_migration_abort'
    )
    resp.status = 202


def action(req, resp, server_id, migration_id):
    _since(req, (2, 22))
    body = json_body(req)
    util.validate_data(body, schema.FORCE_COMPLETE)
    record = action_steps.server_for(req, server_id, policies.MIGRATIONS_FORCE)
    _migrating(req, record, 'force_complete')
    migration = live_obj.of_server(
        util.deps(req).cells, record, _migration_id(migration_id)
    )
    if migration is None:
        raise util.bad_request(
            'Instance %s has no migration %s.' % (record['uuid'], migration_id)
        )
    if (
        migration['migration_type'] != migration_types.LIVE_MIGRATION
        or migration['status'] != 'running'
    ):
        raise util.bad_request(
            'Migration %s state of instance %s is %s. Cannot '
            'force_complete while the migration is in this state.'
            % (migration_id, record['uuid'], migration['status'])
        )
    _signal(
        req,
        record,
        migration,
        'live_migration_force_complete',
        'live_migration_force_complete',
    )
    resp.status = 202
