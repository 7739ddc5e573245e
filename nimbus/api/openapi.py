"""The compute API's OpenAPI document (``GET /openapi.json`` and
``GET /v2.1/openapi.json``, no token needed).

The route table (:data:`nimbus.api.handler.ROUTES`) gives paths and
methods; this module adds the schemas the handlers validate with at the
latest microversion (request bodies and query strings), and the links a
stateful client follows (create a flavor, then read, update, delete it
and its extra specs). ``make openapi`` writes it to
``docs/openapi/compute.json``.
"""

from nimbus.api.handlers import capacity
from nimbus.api.handlers import external_events
from nimbus.api.handlers import hypervisors
from nimbus.api.handlers import image_data
from nimbus.api.handlers import migrations
from nimbus.api.handlers import scheduler
from nimbus.api.handlers import scheduler_moves
from nimbus.api.handlers import server_groups
from nimbus.api.schemas import aggregates
from nimbus.api.schemas import flavor_access
from nimbus.api.schemas import flavors
from nimbus.api.schemas import images
from nimbus.api.schemas import keypairs
from nimbus.api.schemas import server_actions
from nimbus.api.schemas import server_live_migrate
from nimbus.api.schemas import servers
from nimbus.api.schemas import services
from nimbus.api import versions
from nimbus.common.wsgi import openapi
from nimbus.common.wsgi.openapi import Operation

PATHS = ('/openapi.json', '/v2.1/openapi.json')
V = '/v2.1'
_LATEST = tuple(int(p) for p in versions.MAX_VERSION.split('.'))

# Nova's error body: {"<kind>": {"message": "...", "code": <status>}}.
ERROR = {
    'type': 'object',
    'minProperties': 1,
    'maxProperties': 1,
    'additionalProperties': {
        'type': 'object',
        'required': ['message', 'code'],
        'properties': {
            'message': {'type': 'string', 'minLength': 1},
            'code': {'type': 'integer'},
        },
    },
}

_FLAVOR = {'flavor_id': '$response.body#/flavor/id'}
_FLAVOR_LINKS = {
    'GetFlavor': ('get_v2_1_flavors_flavor_id', _FLAVOR),
    'UpdateFlavor': ('put_v2_1_flavors_flavor_id', _FLAVOR),
    'DeleteFlavor': ('delete_v2_1_flavors_flavor_id', _FLAVOR),
    'CreateExtraSpecs': (
        'post_v2_1_flavors_flavor_id_os_extra_specs',
        _FLAVOR,
    ),
    'ListExtraSpecs': ('get_v2_1_flavors_flavor_id_os_extra_specs', _FLAVOR),
}
_AGGREGATE = {'aggregate_id': '$response.body#/aggregate/id'}
_AGGREGATE_LINKS = {
    'GetAggregate': ('get_v2_1_os_aggregates_aggregate_id', _AGGREGATE),
    'UpdateAggregate': ('put_v2_1_os_aggregates_aggregate_id', _AGGREGATE),
    'AggregateAction': (
        'post_v2_1_os_aggregates_aggregate_id_action',
        _AGGREGATE,
    ),
    'DeleteAggregate': ('delete_v2_1_os_aggregates_aggregate_id', _AGGREGATE),
}
_GROUP = {'group_id': '$response.body#/server_group/id'}
_GROUP_LINKS = {
    'GetGroup': ('get_v2_1_os_server_groups_group_id', _GROUP),
    'DeleteGroup': ('delete_v2_1_os_server_groups_group_id', _GROUP),
}
_KEYPAIR = {'keypair_name': '$response.body#/keypair/name'}
_KEYPAIR_LINKS = {
    'GetKeypair': ('get_v2_1_os_keypairs_keypair_name', _KEYPAIR),
    'DeleteKeypair': ('delete_v2_1_os_keypairs_keypair_name', _KEYPAIR),
}
_SERVER = {'server_id': '$response.body#/server/id'}
_SERVER_LINKS = {
    'GetServer': ('get_v2_1_servers_server_id', _SERVER),
    'DeleteServer': ('delete_v2_1_servers_server_id', _SERVER),
}


def _image_operations(prefix):
    base = prefix + '/v2/images'
    image = {'image_id': '$response.body#/id'}
    return {
        ('GET', base): Operation(query=images.INDEX_QUERY),
        ('POST', base): Operation(
            body=images.CREATE,
            success=(201,),
            errors=(409,),
            links={
                201: {
                    'GetImage': (
                        openapi.operation_id('GET', base + '/{image_id}'),
                        image,
                    ),
                    'DeleteImage': (
                        openapi.operation_id('DELETE', base + '/{image_id}'),
                        image,
                    ),
                }
            },
        ),
        ('PUT', base + '/{image_id}'): Operation(
            body=images.UPDATE, success=(200,)
        ),
        ('PATCH', base + '/{image_id}'): Operation(
            body=images.PATCH, success=(200,)
        ),
        ('DELETE', base + '/{image_id}'): Operation(
            success=(204,), errors=(409,)
        ),
        ('GET', base + '/{image_id}/file'): Operation(
            success=(200, 204), bodiless=(204,)
        ),
        ('PUT', base + '/{image_id}/file'): Operation(
            success=(204,), errors=(409,)
        ),
    }


def operations():
    """``{(METHOD, path): Operation}`` of every described route."""
    ops = {
        # 503: a marker in a cell that is down (see the README's "While
        # a cell is down"); a show of a down cell's server below 2.69.
        ('GET', V + '/servers'): Operation(
            query=servers.LIST_QUERY, errors=(503,)
        ),
        ('GET', V + '/servers/detail'): Operation(
            query=servers.LIST_QUERY, errors=(503,)
        ),
        ('GET', V + '/servers/{server_id}'): Operation(errors=(503,)),
        ('POST', V + '/servers'): Operation(
            body=servers.create_schema(_LATEST),
            success=(202,),
            errors=(409,),
            links={202: _SERVER_LINKS},
        ),
        ('DELETE', V + '/servers/{server_id}'): Operation(
            success=(204,), errors=(409,)
        ),
        # 200: rescue and os-getConsoleOutput answer a body; 202: the
        # others, without one as Nova's (but rebuild, which shows the
        # server); 409: a wrong state or a locked server.
        ('POST', V + '/servers/{server_id}/action'): Operation(
            body=server_actions.body_schema(_LATEST),
            success=(200, 202),
            errors=(409, 501, 503),
            bodiless=(202,),
        ),
        # A server's live migrations (2.22 to 2.24, 2.65); 503: the cell
        # or the source compute cannot be reached.
        ('GET', V + '/servers/{server_id}/migrations'): Operation(
            errors=(503,)
        ),
        ('GET', V + '/servers/{server_id}/migrations/{migration_id}'): (
            Operation(errors=(404, 503))
        ),
        ('DELETE', V + '/servers/{server_id}/migrations/{migration_id}'): (
            Operation(success=(202,), errors=(409, 503), bodiless=(202,))
        ),
        (
            'POST',
            V + '/servers/{server_id}/migrations/{migration_id}/action',
        ): Operation(
            body=server_live_migrate.FORCE_COMPLETE,
            success=(202,),
            errors=(409, 503),
            bodiless=(202,),
        ),
        ('GET', V + '/servers/{server_id}/diagnostics'): Operation(
            errors=(409, 501, 503)
        ),
        ('GET', V + '/flavors'): Operation(query=flavors.INDEX_QUERY),
        ('GET', V + '/flavors/detail'): Operation(query=flavors.INDEX_QUERY),
        ('POST', V + '/flavors'): Operation(
            body=flavors.CREATE_V255,
            success=(200,),
            errors=(409,),
            links={200: _FLAVOR_LINKS},
        ),
        ('PUT', V + '/flavors/{flavor_id}'): Operation(
            body=flavors.UPDATE, success=(200,)
        ),
        ('DELETE', V + '/flavors/{flavor_id}'): Operation(
            success=(202,), bodiless=(202,)
        ),
        ('POST', V + '/flavors/{flavor_id}/os-extra_specs'): Operation(
            body=flavors.EXTRA_SPECS, success=(200,)
        ),
        ('PUT', V + '/flavors/{flavor_id}/os-extra_specs/{key}'): Operation(
            body=flavors.EXTRA_SPEC_ONE, success=(200,)
        ),
        ('DELETE', V + '/flavors/{flavor_id}/os-extra_specs/{key}'): Operation(
            success=(200,)
        ),
        ('POST', V + '/flavors/{flavor_id}/action'): Operation(
            body=flavor_access.ACTION, success=(200,), errors=(409,)
        ),
        ('GET', V + '/os-keypairs'): Operation(
            query=keypairs.query_schema(_LATEST, listing=True)
        ),
        ('POST', V + '/os-keypairs'): Operation(
            body=keypairs.create_schema(_LATEST),
            success=(201,),
            errors=(409,),
            links={201: _KEYPAIR_LINKS},
        ),
        ('GET', V + '/os-keypairs/{keypair_name}'): Operation(
            query=keypairs.query_schema(_LATEST)
        ),
        ('DELETE', V + '/os-keypairs/{keypair_name}'): Operation(
            query=keypairs.query_schema(_LATEST), success=(204,)
        ),
        ('GET', V + '/os-migrations'): Operation(
            query=migrations.LATEST_QUERY
        ),
        ('GET', V + '/os-services'): Operation(query=services.LIST_QUERY),
        ('PUT', V + '/os-services/{service_id}'): Operation(
            body=services.UPDATE_V253, success=(200,)
        ),
        ('DELETE', V + '/os-services/{service_id}'): Operation(
            success=(204,), errors=(409,)
        ),
        ('GET', V + '/os-hypervisors'): Operation(
            query=hypervisors.LIST_QUERY
        ),
        ('GET', V + '/os-hypervisors/detail'): Operation(
            query=hypervisors.LIST_QUERY
        ),
        ('GET', V + '/os-hypervisors/{hypervisor_id}'): Operation(
            query=hypervisors.SHOW_QUERY
        ),
        ('POST', V + '/os-aggregates'): Operation(
            body=aggregates.CREATE,
            success=(200,),
            errors=(409,),
            links={200: _AGGREGATE_LINKS},
        ),
        ('PUT', V + '/os-aggregates/{aggregate_id}'): Operation(
            body=aggregates.UPDATE, success=(200,), errors=(409,)
        ),
        ('POST', V + '/os-aggregates/{aggregate_id}/action'): Operation(
            body=aggregates.ACTION, success=(200,), errors=(409,)
        ),
        ('DELETE', V + '/os-aggregates/{aggregate_id}'): Operation(
            success=(200,), errors=(409,), bodiless=(200,)
        ),
        ('GET', V + '/os-server-groups'): Operation(
            query=server_groups.LIST_QUERY
        ),
        ('POST', V + '/os-server-groups'): Operation(
            body=server_groups.CREATE_V264,
            success=(200,),
            errors=(409,),
            links={200: _GROUP_LINKS},
        ),
        ('DELETE', V + '/os-server-groups/{group_id}'): Operation(
            success=(204,)
        ),
        # Nova answers a quota reset with 202 and no body.
        ('DELETE', V + '/os-quota-sets/{project_id}'): Operation(
            success=(202,), bodiless=(202,)
        ),
        ('POST', V + '/os-server-external-events'): Operation(
            body=external_events.create_schema(_LATEST), success=(200, 207)
        ),
        ('POST', V + '/os-scheduler/dry-run'): Operation(
            body=scheduler.DRY_RUN, success=(200,), errors=(503,)
        ),
        ('POST', V + '/os-scheduler/move-dry-run'): Operation(
            body=scheduler_moves.MOVE_DRY_RUN,
            success=(200,),
            errors=(400, 404, 409, 503),
        ),
        ('GET', V + '/os-scheduler/records'): Operation(
            query=scheduler.RECORDS_QUERY
        ),
        ('GET', V + '/os-scheduler/capacity'): Operation(
            query=capacity.QUERY, errors=(503,)
        ),
    }
    for prefix in ('', image_data.PREFIX):
        ops.update(_image_operations(prefix))
    return ops


def serve(req, resp):
    """GET /openapi.json and /v2.1/openapi.json: this document (no token
    needed)."""
    resp.data = cached_json()
    resp.content_type = 'application/json'


# Added to the route table by nimbus.api.app.make_app.
ROUTES = [(path, {'GET': serve}) for path in PATHS]


def document():
    from nimbus.api import handler

    # The dashboard's page, assets and event stream are HTML, JS, CSS and
    # server-sent events for a browser, not part of the JSON API.
    routes = [
        route
        for route in handler.ROUTES
        if not route[0].startswith('/dashboard')
    ]
    return openapi.document(
        routes + ROUTES,
        title='Nimbus compute API',
        api_version=versions.MAX_VERSION,
        error_schema=ERROR,
        operations=operations(),
        microversion=(
            'OpenStack-API-Version',
            'compute',
            versions.MIN_VERSION,
            versions.MAX_VERSION,
        ),
        public_paths=handler.PUBLIC_PATHS + PATHS,
        description='Servers, flavors, key pairs, aggregates, server groups, '
        'services, hypervisors and images, at microversion %s.'
        % versions.MAX_VERSION,
    )


_JSON = []


def cached_json():
    """The document as JSON bytes, built once per process."""
    if not _JSON:
        _JSON.append(openapi.dumps(document()).encode())
    return _JSON[0]
