"""JSON schemas of the inventory routes."""

import copy

MAX_INT = 2147483647
BASE_INVENTORY = {
    'type': 'object',
    'properties': {
        'resource_provider_generation': {'type': 'integer'},
        'total': {'type': 'integer', 'maximum': MAX_INT, 'minimum': 1},
        'reserved': {'type': 'integer', 'maximum': MAX_INT, 'minimum': 0},
        'min_unit': {'type': 'integer', 'maximum': MAX_INT, 'minimum': 1},
        'max_unit': {'type': 'integer', 'maximum': MAX_INT, 'minimum': 1},
        'step_size': {'type': 'integer', 'maximum': MAX_INT, 'minimum': 1},
        # No lower bound: the capacity check decides (as Placement).
        'allocation_ratio': {'type': 'number', 'maximum': 3.40282e38},
    },
    'required': ['total', 'resource_provider_generation'],
    'additionalProperties': False,
}
RC_NAME = {'type': 'string', 'pattern': '^[A-Z0-9_]+$', 'maxLength': 255}

POST_INVENTORY = copy.deepcopy(BASE_INVENTORY)
POST_INVENTORY['properties']['resource_class'] = RC_NAME
POST_INVENTORY['required'] = ['total', 'resource_class']

_ONE = copy.deepcopy(BASE_INVENTORY)
del _ONE['properties']['resource_provider_generation']
_ONE['required'] = ['total']
PUT_INVENTORIES = {
    'type': 'object',
    'properties': {
        'resource_provider_generation': {'type': 'integer'},
        'inventories': {
            'type': 'object',
            'patternProperties': {'^[A-Z0-9_]+$': _ONE},
            'additionalProperties': False,
        },
    },
    'required': ['resource_provider_generation', 'inventories'],
    'additionalProperties': False,
}
