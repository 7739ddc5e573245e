"""The quota checks of POST /servers: the metadata and personality files
asked for, how many servers the project may still have, the members of
the server group they join, and the recount once their records are
written. Over a limit is a 403; usage that cannot be counted a 503 (no
server is created on a guess).
"""

from nimbus.api import util
from nimbus.api.objects import quota_usage
from nimbus.api.objects import servers as server_obj
from nimbus.common.wsgi import errors


def _unavailable(exc):
    return errors.HTTPError(
        503,
        'Quota usage could not be counted, no server was created: %s' % exc,
    )


def read_usage(req):
    """The API database's part of the quota check (its limits, servers and
    build requests), for the caller to read with the rest of what a create
    checks; the caller holds the project's lock (``quota_locks``): the
    count does not see the records of a create of this process that its
    recheck is about to remove."""
    deps = util.deps(req)
    return quota_usage.read_snapshot(deps, util.ctx(req).project_id)


def allowed_count(req, server, flavor, min_count, max_count, snap):
    """How many servers to create (Nova lowers ``max_count`` to what the
    project's quotas allow, never below ``min_count``); 403 over quota.
    ``snap`` is :func:`read_usage`'s, completed here with the cores and
    RAM of the cells (or placement). The metadata and personality files
    are checked first, against the same limits."""
    deps = util.deps(req)
    ctx = util.ctx(req)
    project_id = ctx.project_id
    try:
        quota_usage.check_metadata(
            deps, project_id, server.get('metadata'), snap.limits
        )
        quota_usage.check_personality(
            deps, project_id, server.get('personality'), snap.limits
        )
        quota_usage.count_cells(deps, ctx, project_id, snap)
        return quota_usage.allowed_instances(
            snap, flavor, min_count, max_count
        )
    except quota_usage.QuotaExceeded as exc:
        raise errors.forbidden(str(exc)) from exc
    except quota_usage.UsageUnavailable as exc:
        raise _unavailable(exc) from exc


def check_group_members(req, group, new_count, snap):
    """``new_count`` more members of server group ``group`` (the spec's
    InstanceGroup, which lists them already); 403 over quota."""
    if group is None:
        return
    try:
        quota_usage.check_group_members(
            util.deps(req),
            util.ctx(req).project_id,
            len(group.members) - new_count,
            new_count,
            snap.limits,
        )
    except quota_usage.QuotaExceeded as exc:
        raise errors.forbidden(str(exc)) from exc


def write_and_recheck(req, instances, spec, group_uuid, flavor, snap):
    """Store the records (one transaction), then count again (``[quota]
    recheck_quota``): creates racing for the last headroom all passed the
    first check, and only those still within the limits once every
    record is counted go on. The recount is one statement (the project's
    servers, compared with those ``snap`` saw) and, only when other
    creates wrote servers meanwhile, a read of their flavors. One over a
    limit gets 403 and its records are removed. The project's lock
    serializes this within the process."""
    deps = util.deps(req)
    ctx = util.ctx(req)
    with deps.quota_locks(ctx.project_id):
        server_obj.create_build_requests(
            deps.api_db, instances, spec, group_uuid
        )
        if not deps.conf.quota.recheck_quota:
            return
        uuids = [instance['uuid'] for instance in instances]
        try:
            quota_usage.recheck_instances(
                deps, snap, ctx.project_id, flavor, uuids
            )
        except quota_usage.QuotaExceeded as exc:
            server_obj.undo_build_requests(deps.api_db, uuids)
            raise errors.forbidden(str(exc)) from exc
