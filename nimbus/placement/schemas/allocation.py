"""JSON schemas of allocations, per microversion, and of the reshaper."""

import copy

from nimbus.placement.schemas.common import UUID_RE
from nimbus.placement.schemas import inventory

RESOURCES = {
    'type': 'object',
    'minProperties': 1,
    'patternProperties': {
        '^[A-Z0-9_]+$': {
            'type': 'integer',
            'minimum': 1,
            'maximum': inventory.MAX_INT,
        }
    },
    'additionalProperties': False,
}
_ID = {'type': 'string', 'minLength': 1, 'maxLength': 255}
CONSUMER_TYPE = {
    'type': 'string',
    'pattern': '^[A-Z0-9_]+$',
    'minLength': 1,
    'maxLength': 255,
}
CONSUMER_GENERATION = {'type': ['integer', 'null']}

PUT_1_0 = {
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'array',
            'minItems': 1,
            'items': {
                'type': 'object',
                'properties': {
                    'resource_provider': {
                        'type': 'object',
                        'properties': {
                            'uuid': {'type': 'string', 'pattern': UUID_RE}
                        },
                        'required': ['uuid'],
                        'additionalProperties': False,
                    },
                    'resources': RESOURCES,
                },
                'required': ['resource_provider', 'resources'],
                'additionalProperties': False,
            },
        },
        'project_id': _ID,
        'user_id': _ID,
    },
    'required': ['allocations'],
    'additionalProperties': False,
}
PUT_1_8 = copy.deepcopy(PUT_1_0)
PUT_1_8['required'] += ['project_id', 'user_id']

ALLOCATIONS_DICT = {
    'type': 'object',
    'minProperties': 1,
    'patternProperties': {
        UUID_RE: {
            'type': 'object',
            'properties': {
                'resources': RESOURCES,
                'generation': {'type': 'integer'},
            },
            'required': ['resources'],
            'additionalProperties': False,
        }
    },
    'additionalProperties': False,
}
PUT_1_12 = {
    'type': 'object',
    'properties': {
        'allocations': ALLOCATIONS_DICT,
        'project_id': _ID,
        'user_id': _ID,
    },
    'required': ['allocations', 'project_id', 'user_id'],
    'additionalProperties': False,
}
PUT_1_28 = copy.deepcopy(PUT_1_12)
PUT_1_28['properties']['allocations']['minProperties'] = 0
PUT_1_28['properties']['consumer_generation'] = CONSUMER_GENERATION
PUT_1_28['required'].append('consumer_generation')
# 1.34: the request group -> providers mappings of an allocation request
# may be sent back as they came from GET /allocation_candidates; they are
# accepted and not stored.
MAPPINGS = {
    'type': 'object',
    'minProperties': 1,
    'additionalProperties': {
        'type': 'array',
        'minItems': 1,
        'items': {'type': 'string', 'pattern': UUID_RE},
    },
}
PUT_1_34 = copy.deepcopy(PUT_1_28)
PUT_1_34['properties']['mappings'] = MAPPINGS
PUT_1_38 = copy.deepcopy(PUT_1_34)
PUT_1_38['properties']['consumer_type'] = CONSUMER_TYPE
PUT_1_38['required'].append('consumer_type')


def put_schema(version):
    for v, schema in (
        ((1, 38), PUT_1_38),
        ((1, 34), PUT_1_34),
        ((1, 28), PUT_1_28),
        ((1, 12), PUT_1_12),
        ((1, 8), PUT_1_8),
    ):
        if version >= v:
            return schema
    return PUT_1_0


def _post(one):
    one = copy.deepcopy(one)
    one['properties']['allocations']['minProperties'] = 0
    return {
        'type': 'object',
        'minProperties': 1,
        'patternProperties': {UUID_RE: one},
        'additionalProperties': False,
    }


POST_1_13 = _post(PUT_1_12)
POST_1_28 = _post(PUT_1_28)
POST_1_34 = _post(PUT_1_34)
POST_1_38 = _post(PUT_1_38)


def post_schema(version):
    if version >= (1, 38):
        return POST_1_38
    if version >= (1, 34):
        return POST_1_34
    if version >= (1, 28):
        return POST_1_28
    return POST_1_13


def _reshaper(post):
    alloc = copy.deepcopy(post)
    alloc['minProperties'] = 0
    invs = copy.deepcopy(inventory.PUT_INVENTORIES)
    return {
        'type': 'object',
        'properties': {
            'inventories': {
                'type': 'object',
                'patternProperties': {UUID_RE: invs},
                'minProperties': 1,
                'additionalProperties': False,
            },
            'allocations': alloc,
        },
        'required': ['inventories', 'allocations'],
        'additionalProperties': False,
    }


RESHAPER_1_30 = _reshaper(POST_1_28)
RESHAPER_1_34 = _reshaper(POST_1_34)
RESHAPER_1_38 = _reshaper(POST_1_38)


def reshaper_schema(version):
    if version >= (1, 38):
        return RESHAPER_1_38
    if version >= (1, 34):
        return RESHAPER_1_34
    return RESHAPER_1_30
