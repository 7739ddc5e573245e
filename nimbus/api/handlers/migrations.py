"""GET /os-migrations: every migration of every cell (resizes, cold and
live migrations, evacuations), as Nova's v2.1 API lists them.

Microversions: 2.23 adds ``migration_type`` (and the filter) and, for a
live migration queued, preparing or running, ``links`` to it under its
server; no progress bytes here (``GET /servers/{id}/migrations`` shows
them); 2.59 adds
``uuid``, paging (``limit``, ``marker`` a migration's uuid,
``migrations_links``) and ``changes-since``; 2.66 ``changes-before``;
2.80 ``user_id`` and ``project_id`` (and their filters). Newest first.
Admin only by default (``os_compute_api:os-migrations:index``).
"""

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.objects import migrations as migration_obj
from nimbus.common.objects import migration as migration_types

# A live migration links to its server's migration (GET
# /servers/{id}/migrations/{id}) while it is in one of these, as Nova's
# view does (not while ``accepted``: the conductor has not placed it yet).
_LINKED = ('queued', 'preparing', 'running', 'post-migrating')
_BASE_FILTERS = ('hidden', 'host', 'instance_uuid', 'source_compute', 'status')


def query_schema(version):
    """The query string ``GET /os-migrations`` takes at ``version``."""
    props = {name: {'type': 'string'} for name in _BASE_FILTERS}
    if version >= (2, 23):
        props['migration_type'] = {
            'type': 'string',
            'enum': list(migration_types.TYPES),
        }
    if version >= (2, 59):
        props['limit'] = {'type': 'string', 'pattern': '^[0-9]+$'}
        props['marker'] = {'type': 'string', 'maxLength': 36}
        props['changes-since'] = {'type': 'string', 'maxLength': 64}
    if version >= (2, 66):
        props['changes-before'] = {'type': 'string', 'maxLength': 64}
    if version >= (2, 80):
        props['user_id'] = {'type': 'string', 'maxLength': 255}
        props['project_id'] = {'type': 'string', 'maxLength': 255}
    return {
        'type': 'object',
        'properties': props,
        # below 2.59 Nova ignores what it does not know
        'additionalProperties': version < (2, 59),
    }


LATEST_QUERY = query_schema((2, 96))


def _filters(params, version):
    filters = {}
    for name in ('host', 'instance_uuid', 'source_compute', 'status'):
        if params.get(name):
            filters[name] = params[name]
    if 'hidden' in params:
        filters['hidden'] = util.boolish(params['hidden'], 'hidden')
    if version >= (2, 23) and params.get('migration_type'):
        filters['migration_type'] = params['migration_type']
    if version >= (2, 80):
        for name in ('user_id', 'project_id'):
            if params.get(name):
                filters[name] = params[name]
    since = (
        util.query_time(params, 'changes-since')
        if version >= (2, 59)
        else None
    )
    before = (
        util.query_time(params, 'changes-before')
        if version >= (2, 66)
        else None
    )
    if since and before and since > before:
        raise util.bad_request(
            'The value of changes-since must be less than or equal to '
            'changes-before.'
        )
    if since:
        filters['changes_since'] = since
    if before:
        filters['changes_before'] = before
    return filters


def _flavor_id(flavor):
    value = (flavor or {}).get('id')
    return value if isinstance(value, int) else None


def view(req, migration):
    """One migration as Nova shows it at the request's microversion."""
    version = util.version(req)
    body = {
        'id': migration['id'],
        'instance_uuid': migration['instance_uuid'],
        'status': migration['status'],
        'source_compute': migration['source_compute'],
        'source_node': migration['source_node'],
        'dest_compute': migration['dest_compute'],
        'dest_node': migration['dest_node'],
        'dest_host': migration['dest_host'],
        'old_instance_type_id': _flavor_id(migration['old_flavor']),
        'new_instance_type_id': _flavor_id(migration['new_flavor']),
        'created_at': util.isotime(migration['created_at']),
        'updated_at': util.isotime(migration['updated_at']),
    }
    if version >= (2, 23):
        body['migration_type'] = migration['migration_type']
        if (
            migration['migration_type'] == migration_types.LIVE_MIGRATION
            and migration['status'] in _LINKED
        ):
            path = 'servers/%s/migrations/%s' % (
                migration['instance_uuid'],
                migration['id'],
            )
            base = util.base_url(req)
            body['links'] = [
                {'rel': 'self', 'href': '%s/v2.1/%s' % (base, path)},
                {'rel': 'bookmark', 'href': '%s/%s' % (base, path)},
            ]
    return owner_fields(body, migration, version)


def owner_fields(body, migration, version):
    """``body`` with the fields both migration views add by microversion:
    the migration's uuid (2.59), its user and project (2.80)."""
    if version >= (2, 59):
        body['uuid'] = migration['uuid']
    if version >= (2, 80):
        body['user_id'] = migration['user_id']
        body['project_id'] = migration['project_id']
    return body


def index(req, resp):
    util.authorize(req, policies.MIGRATIONS)
    version = util.version(req)
    params = util.query(req, query_schema(version))
    filters = _filters(params, version)
    deps = util.deps(req)
    limit = marker = None
    if version >= (2, 59):
        limit = util.limit_of(req, params)
        marker = params.get('marker')
    try:
        rows, more = migration_obj.listing(
            deps.cells, filters, limit=limit, marker_uuid=marker
        )
    except migration_obj.MarkerNotFound as exc:
        raise util.bad_request(
            'Marker %s could not be found.' % marker
        ) from exc
    body = {'migrations': [view(req, row) for row in rows]}
    if more and rows:
        body['migrations_links'] = util.next_link(
            req, 'os-migrations', rows[-1]['uuid'], params
        )
    resp.media = body
