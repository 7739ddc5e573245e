"""POST /servers/{id}/action ``os-migrateLive``, as Nova's v2.1 API.

Admin only (``os_compute_api:os-migrate-server:migrate_live``; with a
host also ``...:migrate_live:host``). The server must be ACTIVE or PAUSED
with no task (409 otherwise, or when locked for anyone but an admin); a
host that is the server's own or that no compute of its cell has is a
400. The task ``migrating`` (status MIGRATING), the instance action
``live-migration`` and the migration (type ``live-migration``,
``accepted``) are made in one transaction, then ``live_migrate_instance``
is cast to the super conductor (:mod:`nimbus.conductor.live_migrate`);
the answer is 202 with no body. A chosen host is always judged by the
scheduler's filters (``requested_destination``), ``force`` (2.30 to
2.67) included, as Nova since 2.68.
"""

from oslo_log import log as logging

from nimbus.api import policies_server_moves_live as policies
from nimbus.api import util
from nimbus.api.handlers import action_steps
from nimbus.api.objects import server_actions as action_obj
from nimbus.api.objects import server_live_migrate as live_obj
from nimbus.api.objects import server_resize as resize_obj
from nimbus.common.wsgi import errors

LOG = logging.getLogger(__name__)

ACTION = 'os-migrateLive'
RECORDED_AS = 'live-migration'


def _options(req, value):
    """``(block_migration, disk_over_commit)`` from the body at the
    request's version: True/False, or None for ``auto`` (2.25)."""
    version = util.version(req)
    block = value.get('block_migration')
    if version >= (2, 25) and block == 'auto':
        block = None
    elif block is not None:
        block = util.boolish(block, 'block_migration')
    over_commit = None
    if version < (2, 25):
        over_commit = util.boolish(
            value.get('disk_over_commit'), 'disk_over_commit'
        )
    if (2, 30) <= version < (2, 68) and value.get('force') is not None:
        # Taken as a requested host the filters still judge (see above).
        util.boolish(value['force'], 'force')
    return block, over_commit


def migrate_live(req, resp, server_id, value):
    record = action_steps.server_for(req, server_id, policies.MIGRATE_LIVE)
    host = value.get('host')
    if host is not None:
        util.authorize(
            req,
            policies.MIGRATE_LIVE_HOST,
            {'project_id': record['project_id']},
        )
    block, over_commit = _options(req, value)
    action_steps.check_lock(req, record)
    action_steps.check_placed(record, ACTION)
    deps = util.deps(req)
    ctx = util.ctx(req)
    if host is not None:
        if host == record.get('host'):
            raise util.bad_request(
                'The target host %s is the host the server is on; a live '
                'migration needs another one.' % host
            )
        if not resize_obj.compute_exists(deps.cells, record['cell'], host):
            raise util.bad_request(
                'Compute host %s could not be found.' % host
            )
    if not deps.compute_api(record['cell']).takes_live_migrations():
        raise util.conflict(
            'The computes are capped below compute RPC 1.5 ([upgrade_levels]'
            ' compute): they cannot live migrate yet.'
        )
    made = []
    with action_steps.beginning(record):
        action_obj.begin(
            deps.cells,
            record,
            ACTION,
            ctx,
            RECORDED_AS,
            ACTION,
            live_obj.make_migration(
                record, ctx, host, 'auto' if block is None else block, made
            ),
        )
    migration = made[0]
    try:
        deps.conductor_api.live_migrate_instance(
            ctx,
            record['uuid'],
            record['cell'].uuid,
            ctx.request_id,
            migration['uuid'],
            block_migration=block,
            disk_over_commit=over_commit,
            host=host,
        )
    except Exception as exc:
        LOG.exception('Could not send the live migration of %s', server_id)
        live_obj.give_back(deps.cells, record, migration['uuid'], ctx)
        raise errors.HTTPError(
            503,
            'The conductor could not be told to live migrate the server; '
            'try again.',
        ) from exc
    resp.status = 202


ACTIONS = {ACTION: migrate_live}
