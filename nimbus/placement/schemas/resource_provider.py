"""JSON schemas of the resource provider routes, per microversion."""

import copy

from nimbus.placement.schemas.common import UUID_RE

POST_1_0 = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string', 'maxLength': 200, 'minLength': 1},
        'uuid': {'type': 'string', 'pattern': UUID_RE},
    },
    'required': ['name'],
    'additionalProperties': False,
}
POST_1_14 = copy.deepcopy(POST_1_0)
POST_1_14['properties']['parent_provider_uuid'] = {
    'anyOf': [{'type': 'string', 'pattern': UUID_RE}, {'type': 'null'}]
}

PUT_1_0 = copy.deepcopy(POST_1_0)
del PUT_1_0['properties']['uuid']
PUT_1_14 = copy.deepcopy(POST_1_14)
del PUT_1_14['properties']['uuid']

# Query parameters allowed on GET /resource_providers, by microversion.
LIST_PARAMS = [
    ((1, 0), ('name', 'uuid')),
    ((1, 3), ('member_of',)),
    ((1, 4), ('resources',)),
    ((1, 14), ('in_tree',)),
    ((1, 18), ('required',)),
]


def list_params(version):
    return [p for v, names in LIST_PARAMS if version >= v for p in names]


def post_schema(version):
    return POST_1_14 if version >= (1, 14) else POST_1_0


def put_schema(version):
    return PUT_1_14 if version >= (1, 14) else PUT_1_0
