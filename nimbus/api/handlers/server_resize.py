"""POST /servers/{id}/action: resize, confirmResize, revertResize and
migrate (cold), as Nova's v2.1 API.

A resize or migrate takes the task ``resize_prep`` with the same
compare-and-swap as the other actions (ACTIVE or SHUTOFF, no task; else
409), starts its instance action and casts ``migrate_server`` to the
super conductor, which makes the migration, schedules and hands the move
to the destination (:mod:`nimbus.conductor.resize`). Refused first: a
locked server (409, but for an admin), the same flavor (400), a flavor
with a smaller root disk (400), a bigger flavor over the project's cores
or RAM quota (403), a migrate to the server's own host or to an unknown
host (400). confirmResize and revertResize need the server in
VERIFY_RESIZE with its migration ``finished``: the task and the
migration's status (``confirming``, ``reverting``) are taken together,
then the source (confirm) or the destination (revert) is told; for a
move that carried the server to another cell (the migration's
``cross_cell_move``) the super conductor is (conductor RPC 1.11, a 409
when it cannot be sent).
"""

from oslo_log import log as logging

from nimbus.api import policies_server_moves_resize as policies
from nimbus.api import util
from nimbus.api.handlers import action_steps
from nimbus.api.handlers import server_create
from nimbus.api.handlers import server_create_body
from nimbus.api.objects import flavors as flavor_obj
from nimbus.api.objects import quota_usage
from nimbus.api.objects import quotas
from nimbus.api.objects import server_actions as action_obj
from nimbus.api.objects import server_resize as resize_obj
from nimbus.common import instance_states as states
from nimbus.common.wsgi import errors

LOG = logging.getLogger(__name__)


def _check_quota(req, record, old, new):
    """A bigger flavor must fit the project's cores and RAM quotas (Nova
    counts the difference; 403 over quota)."""
    deps = util.deps(req)
    grow = {
        'cores': int(new['vcpus']) - int(old.get('vcpus') or 0),
        'ram': int(new['memory_mb']) - int(old.get('memory_mb') or 0),
    }
    if all(v <= 0 for v in grow.values()):
        return
    project_id = record['project_id']
    try:
        limits = quotas.project_limits(deps.conf, deps.api_db, project_id)
        used = quota_usage.project_usage(deps, util.ctx(req), project_id)
    except quota_usage.UsageUnavailable as exc:
        raise errors.HTTPError(
            503, 'Quota usage could not be counted: %s' % exc
        ) from exc
    overs = [
        r
        for r, more in grow.items()
        if more > 0 and limits[r] >= 0 and used[r] + more > limits[r]
    ]
    if overs:
        raise errors.forbidden(
            quota_usage.exceeded_message(overs, grow, used, limits)
        )


def _begin_move(req, record, action_name, api_name, flavor=None, host=None):
    """Take ``resize_prep`` and cast migrate_server to the super
    conductor (a cast that cannot be sent gives the task back: 503)."""
    deps = util.deps(req)
    ctx = util.ctx(req)
    action_steps.check_placed(record, api_name)
    # As Nova: checked without failing; denied, the move stays in the cell.
    cross_cell = util.can(
        req, policies.CROSS_CELL, {'project_id': record['project_id']}
    )
    with action_steps.beginning(record):
        action_obj.begin(
            deps.cells, record, action_name, ctx, action_name, api_name
        )
    with action_steps.sending(
        req,
        record,
        action_name,
        api_name,
        'The conductor could not be told to %s the server; try again.'
        % api_name,
    ):
        deps.conductor_api.migrate_server(
            ctx,
            record['uuid'],
            record['cell'].uuid,
            ctx.request_id,
            flavor=flavor,
            host=host,
            cross_cell=cross_cell,
        )


def resize(req, resp, server_id, value):
    record = action_steps.server_for(req, server_id, policies.RESIZE)
    action_steps.check_lock(req, record)
    flavor = server_create_body.lookup_flavor(req, str(value['flavorRef']))
    old = record.get('flavor') or {}
    if str(flavor['flavorid']) == str(old.get('flavorid')):
        raise util.bad_request('When resizing, instances must change flavor!')
    if int(flavor['root_gb'] or 0) < int(old.get('root_gb') or 0):
        raise util.bad_request(
            'Resize to zero disk flavor is not allowed.'
            if not flavor['root_gb']
            else 'Flavor %s has a smaller root disk (%s GB) than the '
            "server's (%s GB)."
            % (flavor['flavorid'], flavor['root_gb'], old.get('root_gb'))
        )
    _check_quota(req, record, old, flavor)
    # A device profile that cannot be resolved is a 400, as at create.
    server_create.device_profile_groups(req, flavor)
    _begin_move(
        req, record, 'resize', 'resize', flavor=flavor_obj.spec_dict(flavor)
    )
    resp.status = 202


def migrate(req, resp, server_id, value):
    record = action_steps.server_for(req, server_id, policies.MIGRATE)
    host = (value or {}).get('host')
    if host is not None:
        util.authorize(
            req, policies.MIGRATE_HOST, {'project_id': record['project_id']}
        )
    action_steps.check_lock(req, record)
    if host is not None:
        action_steps.check_placed(record, 'migrate')
        if host == record.get('host'):
            raise util.bad_request(
                'The target host %s is the host the server is on; a cold '
                'migrate needs another one.' % host
            )
        if not resize_obj.compute_exists(
            util.deps(req).cells, record['cell'], host
        ):
            raise util.bad_request(
                'Compute host %s could not be found.' % host
            )
    _begin_move(req, record, 'migrate', 'migrate', host=host)
    resp.status = 202


def _end(req, record, action_name, api_name, status, host_of, cast):
    deps = util.deps(req)
    ctx = util.ctx(req)
    action_steps.check_placed(record, api_name)
    migration = resize_obj.finished_migration(deps.cells, record)
    if migration is None:
        raise util.bad_request(
            'Instance %s has not been resized.' % record['uuid']
        )
    if (
        migration.cross_cell_move
        and not deps.conductor_api.takes_cross_cell_ends()
    ):
        raise util.conflict(
            'The server was moved to another cell and the super conductor '
            'cannot %s it yet (conductor RPC 1.11).' % api_name
        )
    with action_steps.beginning(record, also=(resize_obj.Conflict,)):
        action_obj.begin(
            deps.cells,
            record,
            action_name,
            ctx,
            action_name,
            api_name,
            resize_obj.take_migration(migration.uuid, status),
        )
    migration.status = status
    host = host_of(migration)
    try:
        if migration.cross_cell_move:
            # The super conductor ends a move across cells (it owns both
            # cells' databases): conductor RPC 1.11.
            cross = {
                'confirming': deps.conductor_api.confirm_cross_cell_resize,
                'reverting': deps.conductor_api.revert_cross_cell_resize,
            }[status]
            cross(
                ctx,
                record['uuid'],
                record['cell'].uuid,
                ctx.request_id,
                migration.uuid,
            )
        else:
            cast(deps.compute_api(record['cell']))(
                ctx, host, record['uuid'], ctx.request_id, migration
            )
    except Exception as exc:
        LOG.exception('Could not send %s of %s', api_name, record['uuid'])
        resize_obj.give_back(
            deps.cells,
            record,
            action_name,
            states.ACTIONS[action_name].task,
            migration.uuid,
            status,
            ctx,
        )
        raise errors.HTTPError(
            503,
            'The compute host %s could not be told to %s; try again.'
            % (host, api_name),
        ) from exc


def confirm_resize(req, resp, server_id, value):
    record = action_steps.server_for(req, server_id, policies.CONFIRM_RESIZE)
    action_steps.check_lock(req, record)
    _end(
        req,
        record,
        'confirmResize',
        'confirmResize',
        'confirming',
        lambda m: m.source_compute,
        lambda api: api.confirm_resize,
    )
    resp.status = 204


def revert_resize(req, resp, server_id, value):
    record = action_steps.server_for(req, server_id, policies.REVERT_RESIZE)
    action_steps.check_lock(req, record)
    _end(
        req,
        record,
        'revertResize',
        'revertResize',
        'reverting',
        lambda m: m.dest_compute,
        lambda api: api.revert_resize,
    )
    resp.status = 202


ACTIONS = {
    'resize': resize,
    'confirmResize': confirm_resize,
    'revertResize': revert_resize,
    'migrate': migrate,
}
