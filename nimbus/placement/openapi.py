"""The placement API's OpenAPI document (``GET /openapi.json``).

The route table (:data:`nimbus.placement.handler.ROUTES`) gives paths and
methods; this module adds what the handlers validate with, at the latest
microversion: the body schemas of ``nimbus.placement.schemas``, the query
parameters each list accepts, and the links a stateful client follows
(create a provider, then its inventories, traits, aggregates...).
``make openapi`` writes it to ``docs/openapi/placement.json``.
"""

from nimbus.common.wsgi import openapi
from nimbus.common.wsgi.openapi import Operation
from nimbus.placement.handlers import root
from nimbus.placement.schemas import aggregate
from nimbus.placement.schemas import allocation
from nimbus.placement.schemas import common
from nimbus.placement.schemas import inventory
from nimbus.placement.schemas import resource_class
from nimbus.placement.schemas import resource_provider
from nimbus.placement.schemas import trait

PATH = '/openapi.json'

_RP = '/resource_providers/{uuid}'
_UUID = {'type': 'string', 'pattern': common.UUID_RE}
_RC = {'path_schemas': {'uuid': _UUID, 'rc': inventory.RC_NAME}}
_LATEST = tuple(int(p) for p in root.MAX_VERSION.split('.'))

# The error body: {"errors": [{status, title, detail, code?, request_id?}]}
ERROR = {
    'type': 'object',
    'required': ['errors'],
    'properties': {
        'errors': {
            'type': 'array',
            'minItems': 1,
            'items': {
                'type': 'object',
                'required': ['status', 'title', 'detail'],
                'properties': {
                    'status': {'type': 'integer'},
                    'title': {'type': 'string'},
                    'detail': {'type': 'string', 'minLength': 1},
                    'code': {'type': 'string'},
                    'request_id': {'type': 'string'},
                    'min_version': {'type': 'string'},
                    'max_version': {'type': 'string'},
                },
            },
        }
    },
}

_BY_UUID = {'uuid': '$response.body#/uuid'}
_PROVIDER_LINKS = {
    'GetProvider': ('get_resource_providers_uuid', _BY_UUID),
    'UpdateProvider': ('put_resource_providers_uuid', _BY_UUID),
    'DeleteProvider': ('delete_resource_providers_uuid', _BY_UUID),
    'SetInventories': ('put_resource_providers_uuid_inventories', _BY_UUID),
    'CreateInventory': ('post_resource_providers_uuid_inventories', _BY_UUID),
    'ListInventories': ('get_resource_providers_uuid_inventories', _BY_UUID),
    'SetTraits': ('put_resource_providers_uuid_traits', _BY_UUID),
    'SetAggregates': ('put_resource_providers_uuid_aggregates', _BY_UUID),
    'GetUsages': ('get_resource_providers_uuid_usages', _BY_UUID),
    'GetAllocations': ('get_resource_providers_uuid_allocations', _BY_UUID),
}
_SAME_UUID = {'uuid': '$request.path.uuid'}
_INVENTORY_LINKS = {
    'GetInventory': (
        'get_resource_providers_uuid_inventories_rc',
        dict(_SAME_UUID, rc='$request.body#/resource_class'),
    ),
    'UpdateInventory': (
        'put_resource_providers_uuid_inventories_rc',
        dict(_SAME_UUID, rc='$request.body#/resource_class'),
    ),
    'GetUsages': ('get_resource_providers_uuid_usages', _SAME_UUID),
}
_CONSUMER = {'consumer_uuid': '$request.path.consumer_uuid'}


def operations():
    """``{(METHOD, path): Operation}`` of every described route."""
    return {
        ('GET', '/resource_providers'): Operation(
            query=resource_provider.list_params(_LATEST)
        ),
        ('POST', '/resource_providers'): Operation(
            body=resource_provider.post_schema(_LATEST),
            success=(200,),
            errors=(409,),
            links={200: _PROVIDER_LINKS},
        ),
        ('GET', _RP): Operation(path_schemas={'uuid': _UUID}),
        ('PUT', _RP): Operation(
            body=resource_provider.put_schema(_LATEST),
            success=(200,),
            errors=(409,),
        ),
        ('DELETE', _RP): Operation(success=(204,), errors=(409,)),
        ('POST', _RP + '/inventories'): Operation(
            body=inventory.POST_INVENTORY,
            success=(201,),
            errors=(409,),
            links={201: _INVENTORY_LINKS},
        ),
        ('PUT', _RP + '/inventories'): Operation(
            body=inventory.PUT_INVENTORIES, success=(200,), errors=(409,)
        ),
        ('DELETE', _RP + '/inventories'): Operation(
            success=(204,), errors=(409,)
        ),
        ('GET', _RP + '/inventories/{rc}'): Operation(**_RC),
        ('PUT', _RP + '/inventories/{rc}'): Operation(
            body=inventory.BASE_INVENTORY, success=(200,), errors=(409,), **_RC
        ),
        ('DELETE', _RP + '/inventories/{rc}'): Operation(
            success=(204,), errors=(409,), **_RC
        ),
        ('PUT', _RP + '/aggregates'): Operation(
            body=aggregate.PUT_1_19, success=(200,), errors=(409,)
        ),
        ('PUT', _RP + '/traits'): Operation(
            body=trait.SET_PROVIDER_TRAITS, success=(200,), errors=(409,)
        ),
        ('DELETE', _RP + '/traits'): Operation(success=(204,), errors=(409,)),
        ('POST', '/resource_classes'): Operation(
            body=resource_class.POST,
            success=(201,),
            errors=(409,),
            bodiless=(201,),
        ),
        ('PUT', '/resource_classes/{name}'): Operation(
            success=(201, 204),
            errors=(409,),
            bodiless=(201, 204),
            path_schemas={'name': resource_class.CUSTOM_NAME},
        ),
        ('DELETE', '/resource_classes/{name}'): Operation(
            success=(204,), errors=(409,)
        ),
        ('GET', '/traits'): Operation(query=('associated', 'name')),
        ('PUT', '/traits/{name}'): Operation(
            success=(201, 204),
            errors=(409,),
            bodiless=(201, 204),
            links={
                201: {
                    'GetTrait': (
                        'get_traits_name',
                        {'name': '$request.path.name'},
                    )
                }
            },
        ),
        ('DELETE', '/traits/{name}'): Operation(success=(204,), errors=(409,)),
        ('POST', '/allocations'): Operation(
            body=allocation.post_schema(_LATEST), success=(204,), errors=(409,)
        ),
        ('PUT', '/allocations/{consumer_uuid}'): Operation(
            body=allocation.put_schema(_LATEST),
            success=(204,),
            errors=(409,),
            path_schemas={'consumer_uuid': _UUID},
            links={
                204: {
                    'GetAllocations': (
                        'get_allocations_consumer_uuid',
                        _CONSUMER,
                    )
                }
            },
        ),
        ('DELETE', '/allocations/{consumer_uuid}'): Operation(
            success=(204,), errors=(409,)
        ),
        ('GET', '/allocation_candidates'): Operation(
            query=(
                'group_policy',
                'in_tree',
                'limit',
                'member_of',
                'required',
                'resources',
                'root_required',
                'same_subtree',
            )
        ),
        ('GET', '/usages'): Operation(
            query={
                'type': 'object',
                'required': ['project_id'],
                'properties': {
                    'project_id': {'type': 'string'},
                    'user_id': {'type': 'string'},
                    'consumer_type': {'type': 'string'},
                },
            }
        ),
        ('POST', '/reshaper'): Operation(
            body=allocation.reshaper_schema(_LATEST),
            success=(204,),
            errors=(409,),
        ),
    }


def serve(req, resp):
    """GET /openapi.json: this document (no token needed)."""
    resp.data = cached_json()
    resp.content_type = 'application/json'


# Added to the route table by nimbus.placement.wsgi.make_app.
ROUTES = [(PATH, {'GET': serve})]


def document():
    from nimbus.placement import handler

    return openapi.document(
        handler.ROUTES + ROUTES,
        title='Nimbus placement API',
        api_version=root.MAX_VERSION,
        error_schema=ERROR,
        operations=operations(),
        microversion=(
            'OpenStack-API-Version',
            'placement',
            root.MIN_VERSION,
            root.MAX_VERSION,
        ),
        public_paths=('/', PATH),
        description='Resource providers, inventories, allocations and '
        'allocation candidates, at microversion %s.' % root.MAX_VERSION,
    )


_JSON = []


def cached_json():
    """The document as JSON bytes, built once per process."""
    if not _JSON:
        _JSON.append(openapi.dumps(document()).encode())
    return _JSON[0]
