"""GET /servers, /servers/detail, /servers/{id}; DELETE /servers/{id}.

POST /servers lives in :mod:`nimbus.api.handlers.server_create`; the
request-size limit in front of it (:func:`create`) is here.
"""

import io
import re

import orjson
from oslo_log import log as logging

from nimbus.api import policies
from nimbus.api import scheduler_cache
from nimbus.api import util
from nimbus.api.handlers import resize_on_delete
from nimbus.api.handlers import server_create
from nimbus.api.handlers import server_minimal
from nimbus.api.handlers import server_views
from nimbus.api.objects import server_actions as action_obj
from nimbus.api.objects import server_groups as group_obj
from nimbus.api.objects import server_list
from nimbus.api.objects import servers as server_obj
from nimbus.api.objects import services as service_obj
from nimbus.api.schemas import servers as schema
from nimbus.common import instance_states as states
from nimbus.common.wsgi import errors
from nimbus.common.wsgi import json_body

LOG = logging.getLogger(__name__)

_STATUS_TO_VM_STATE = {v: k for k, v in states.API_STATUS.items()}
_ADMIN_FILTERS = ('host', 'node', 'project_id', 'tenant_id', 'deleted')
_PAGING_SORTING = ('limit', 'marker', 'sort_key', 'sort_dir')


def _list(req, resp, detail):
    ctx = util.ctx(req)
    util.authorize(req, policies.SERVERS % ('detail' if detail else 'index'))
    params = util.query(req, schema.LIST_QUERY)
    is_admin = util.can(req, policies.ALL_TENANTS)
    for key in _ADMIN_FILTERS:
        if key in params and not is_admin:
            # Nova ignores admin-only filters for other users.
            params.pop(key)
    # From 2.69 the servers of a down cell are listed as minimal records,
    # as in Nova only when nothing but all_tenants is asked: no filter,
    # sort or paging parameter (those cannot be checked against what the
    # API database knows).
    minimal = util.version(req) >= (2, 69) and not (
        set(params) - {'all_tenants'}
        or any(key in req.params for key in _PAGING_SORTING)
    )
    project_id = ctx.project_id
    if is_admin and 'all_tenants' in params:
        raw = params['all_tenants']
        if raw == '' or util.boolish(raw, 'all_tenants'):
            project_id = params.get('project_id') or params.get('tenant_id')
    elif is_admin and (params.get('project_id') or params.get('tenant_id')):
        project_id = params.get('project_id') or params.get('tenant_id')
    filters = {}
    if 'status' in params:
        filters['vm_state'] = _STATUS_TO_VM_STATE[params['status'].upper()]
        if filters['vm_state'] == states.DELETED:
            if not is_admin:
                raise util.bad_request(
                    'Only administrators may list deleted servers.'
                )
            filters['deleted'] = True
    if 'deleted' in params:
        filters['deleted'] = util.boolish(params['deleted'], 'deleted')
    for key in ('host', 'node', 'user_id', 'availability_zone'):
        if key in params:
            filters[key] = params[key]
    window = _change_window(req, params)
    if window and 'deleted' not in filters:
        filters['deleted'] = None  # as in Nova: live and deleted servers
    filters.update(window)
    if 'image' in params:
        filters['image_ref'] = params['image'].rstrip('/').rsplit('/', 1)[-1]
    name = params.get('name')
    if name is not None:
        try:
            re.compile(name)
        except re.error as exc:
            raise util.bad_request(
                'Invalid regular expression in query parameter name.'
            ) from exc
    where = _record_filter(params)
    deps = util.deps(req)
    limit = util.limit_of(req, params)
    try:
        records, more, unreachable = server_list.list_page(
            deps.api_db,
            deps.cells,
            project_id,
            filters,
            sort_key=params.get('sort_key', 'created_at'),
            sort_dir=params.get('sort_dir', 'desc'),
            limit=limit,
            marker=params.get('marker'),
            name=name,
            where=where,
            queries=deps.cell_queries,
            minimal=minimal,
        )
    except server_list.MarkerNotFound as exc:
        raise util.bad_request(
            'marker [%s] not found' % params['marker']
        ) from exc
    except server_list.MarkerUnreachable as exc:
        raise errors.HTTPError(
            503,
            'Cell %s of the marker server %s is not responding; try '
            'again later.' % (exc, params['marker']),
        ) from exc
    if unreachable:
        LOG.warning(
            'Listed servers %s those of unreachable cell(s) %s',
            'with minimal records for' if minimal else 'without',
            ', '.join(unreachable),
        )
    if detail:
        views = (server_minimal.detail, server_views.detail)
    else:
        views = (server_minimal.index, server_views.basic)
    servers = [views[0 if r.get('minimal') else 1](req, r) for r in records]
    resp.media = util.paged_body(
        req,
        'servers',
        servers,
        'servers',
        detail,
        more,
        lambda: records[-1]['uuid'],
        params,
    )


def _change_window(req, params):
    """``changes_since``/``changes_before`` filters (naive UTC) from the
    query. A value that is not an ISO 8601 time, or a window that ends
    before it starts, is a 400."""
    names = ['changes-since']
    if util.version(req) >= (2, 66):
        names.append('changes-before')
    window = {}
    for name in names:
        if name in params:
            window[name.replace('-', '_')] = util.query_time(params, name)
    since, before = window.get('changes_since'), window.get('changes_before')
    if since is not None and before is not None and since > before:
        raise util.bad_request(
            'The value of changes-since must be less '
            'than or equal to changes-before.'
        )
    return window


def _record_filter(params):
    """A predicate for the filters no column holds (checked on each record
    read), or None."""
    if 'flavor' not in params and 'reservation_id' not in params:
        return None

    def where(record):
        if (
            'flavor' in params
            and (record.get('flavor') or {}).get('flavorid')
            != params['flavor']
        ):
            return False
        return (
            'reservation_id' not in params
            or record.get('reservation_id') == params['reservation_id']
        )

    return where


def create(req, resp):
    """POST /servers: the deployment's request-size limit, then
    :func:`nimbus.api.handlers.server_create.create`.

    ``max_count`` decides how many build requests, request specs and
    scheduler selections one request makes, so a count above ``[api]
    max_instances_per_request`` is refused before anything is stored.
    """
    util.authorize(req, policies.SERVERS % 'create')
    message = _count_error(req)
    if message is not None:
        raise util.bad_request(message)
    server_create.create(req, resp)


def _count_error(req):
    """Read the body once to check its counts, and leave it in place for
    the create handler, which reads it through falcon's ``bounded_stream``
    (built on first use, over the WSGI input)."""
    length = req.content_length or 0
    content_type = (req.content_type or '').split(';')[0].strip().lower()
    if not length or content_type != 'application/json':
        return None  # the create handler answers 400/415
    raw = req.stream.read(length)
    # Put the body back where falcon's bounded_stream (built on first use,
    # from the WSGI input) will read it.
    req.env['wsgi.input'] = req.stream = io.BytesIO(raw)
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    server = body.get('server') if isinstance(body, dict) else None
    if not isinstance(server, dict):
        return None
    return schema.count_error(
        server, util.deps(req).conf.api.max_instances_per_request
    )


def index(req, resp):
    _list(req, resp, detail=False)


def detail(req, resp):
    _list(req, resp, detail=True)


def get_authorized(req, server_id, rule, minimal=False):
    """The server's record once ``rule`` allows it. When its cell is down
    the answer is 503, or with ``minimal`` (a show from 2.69) the minimal
    record the API database gives (``minimal`` set)."""
    deps = util.deps(req)
    try:
        record = server_obj.get(
            deps.api_db, deps.cells, server_id, deps.cell_queries
        )
    except server_obj.ServerNotFound as exc:
        raise util.not_found('Instance', server_id) from exc
    except server_obj.CellUnreachable as exc:
        if not minimal:
            raise errors.HTTPError(
                503,
                'The cell of server %s (%s) cannot be reached; try again '
                'later.' % (server_id, exc),
            ) from exc
        record = server_obj.minimal_of(deps.api_db, exc.mapping, exc.cell)
    target = {
        'project_id': record['project_id'],
        'user_id': record.get('user_id'),
    }
    if not util.can(req, rule, target):
        if record['project_id'] == util.ctx(req).project_id:
            # Your project's server, which your roles may not touch.
            util.authorize(req, rule, target)
        # Another project's server does not exist, as far as you know.
        raise util.not_found('Instance', server_id)
    return record


def show(req, resp, server_id):
    version = util.version(req)
    record = get_authorized(
        req, server_id, policies.SERVERS % 'show', minimal=version >= (2, 69)
    )
    if record.get('minimal'):
        body = server_minimal.show(req, record)
    else:
        body = server_views.detail(req, record)
    if version >= (2, 71):
        # Nova shows a server's groups in show (not in lists) from 2.71.
        body['server_groups'] = group_obj.of_instance(
            util.deps(req).api_db, record['uuid']
        )
    resp.media = {'server': body}


# What Nova's update response leaves out of the detail view.
NOT_IN_UPDATE = (
    'key_name',
    'security_groups',
    'config_drive',
    'os-extended-volumes:volumes_attached',
    'host_status',
    'OS-EXT-AZ:availability_zone',
    'fault',
)
NOT_IN_UPDATE_PREFIXES = ('OS-EXT-SRV-ATTR:', 'OS-EXT-STS:', 'OS-SRV-USG:')

_UPDATE_FIELDS = {
    'name': 'display_name',
    'description': 'description',
    'accessIPv4': 'access_ip_v4',
    'accessIPv6': 'access_ip_v6',
    'hostname': 'hostname',
    'OS-DCF:diskConfig': 'disk_config',
}


def update(req, resp, server_id):
    """PUT /servers/{id}: name, access addresses, disk config, and from
    2.19 the description, from 2.90 the hostname."""
    record = get_authorized(req, server_id, policies.SERVERS % 'update')
    version = util.version(req)
    body = json_body(req, schema.update_schema(version))['server']
    values = {_UPDATE_FIELDS[key]: value for key, value in body.items()}
    for key in ('accessIPv4', 'accessIPv6'):
        if key in body:
            values[_UPDATE_FIELDS[key]] = util.access_ip(body[key], key)
    deps = util.deps(req)
    if not server_obj.update(deps.api_db, deps.cells, record, values):
        raise util.not_found('Server', server_id)
    record = get_authorized(req, server_id, policies.SERVERS % 'update')
    shown = server_views.detail(req, record)
    view = {
        key: value
        for key, value in shown.items()
        if key not in NOT_IN_UPDATE
        and not key.startswith(NOT_IN_UPDATE_PREFIXES)
    }
    if version >= (2, 71):
        view['server_groups'] = group_obj.of_instance(
            deps.api_db, record['uuid']
        )
    resp.media = {'server': view}


def delete(req, resp, server_id):
    """Delete a server wherever it is.

    A build request is simply removed. An instance whose compute can act
    (host set, service up) is marked ``deleting`` and the compute is told
    to terminate it: it destroys the guest, frees the allocation and marks
    the record deleted. Otherwise (cell0, no host, or the compute service
    down or forced down) the API deletes locally, as Nova does: the record
    is marked deleted, its allocations are removed from placement at once,
    and the compute destroys the leftover guest when it comes back (its
    startup, and every resource update, destroys guests with no live
    instance record). Either way every scheduler's cache is told.
    """
    record = get_authorized(req, server_id, policies.SERVERS % 'delete')
    deps = util.deps(req)
    ctx = util.ctx(req)
    if record.get('locked_by') and not ctx.is_admin:
        raise util.conflict('Instance %s is locked' % server_id)
    cell = record['cell']
    if cell is None:
        if server_obj.delete_build_request(deps.api_db, server_id):
            resp.status = 204
            return
        # The conductor took it to a cell meanwhile: delete it there.
        record = get_authorized(req, server_id, policies.SERVERS % 'delete')
        cell = record['cell']
    if resize_on_delete.confirm_first(req, record):
        record = get_authorized(req, server_id, policies.SERVERS % 'delete')
        cell = record['cell']
    host = record.get('host')
    if (
        cell.is_cell0
        or not host
        or not service_obj.compute_is_up(
            deps.cells, cell, host, deps.conf.service_down_time, util.utcnow()
        )
    ):
        _local_delete(req, cell, server_id, host)
    elif _soft_deletes(deps, record):
        _soft_delete(req, record)
    elif server_obj.mark_deleting(deps.cells, cell, server_id):
        deps.compute_api(cell).terminate_instance(ctx, host, server_id)
        scheduler_cache.instance_deleted(req, host, server_id)
    server_obj.queue_for_delete(deps.api_db, server_id)
    resp.status = 204


def _soft_deletes(deps, record):
    """With ``[DEFAULT] reclaim_instance_interval`` a server that has run
    is soft-deleted (as Nova: one never launched is deleted at once)."""
    return (
        deps.conf.reclaim_instance_interval > 0
        and record.get('launched_at') is not None
        and record['vm_state'] in states.ACTIONS['soft_delete'].vm_states
    )


def _soft_delete(req, record):
    """Take the soft-deleting task (stamping ``deleted_at``, which the
    reclaim reads) and have the compute shut the guest down; the server
    ends SOFT_DELETED. One whose state changed meanwhile is deleted as
    usual."""
    deps = util.deps(req)
    ctx = util.ctx(req)
    try:
        action_obj.begin(
            deps.cells,
            record,
            'soft_delete',
            ctx,
            'delete',
            then=action_obj.stamp_deleted_at(record['uuid']),
        )
    except (action_obj.InvalidState, action_obj.Gone):
        if server_obj.mark_deleting(
            deps.cells, record['cell'], record['uuid']
        ):
            deps.compute_api(record['cell']).terminate_instance(
                ctx, record['host'], record['uuid']
            )
            scheduler_cache.instance_deleted(
                req, record['host'], record['uuid']
            )
        return
    deps.compute_api(record['cell']).soft_delete_instance(
        ctx, record['host'], record['uuid'], ctx.request_id
    )


def _local_delete(req, cell, server_id, host):
    deps = util.deps(req)
    if host:
        LOG.info(
            'Deleting %s locally: nimbus-compute on %s is down',
            server_id,
            host,
        )
    if deps.placement is not None:
        # First, so that a placement outage fails the delete (503, try
        # again) instead of leaving an allocation nobody would free.
        try:
            deps.placement.remove_allocations(util.ctx(req), server_id)
        except Exception as exc:
            LOG.warning(
                'Could not remove the allocations of %s',
                server_id,
                exc_info=True,
            )
            raise errors.HTTPError(
                503,
                'Placement could not be reached to '
                "free the server's resources; it "
                'was not deleted. Try again.',
            ) from exc
    if not server_obj.mark_deleted(deps.cells, cell, server_id, util.utcnow()):
        return  # somebody else deleted it first
    if host:
        scheduler_cache.instance_deleted(req, host, server_id)
