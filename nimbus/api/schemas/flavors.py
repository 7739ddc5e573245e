"""Schemas of /flavors and /flavors/{id}/os-extra_specs."""

import copy

from nimbus.api.schemas import common

_POS = {
    'type': ['integer', 'string'],
    'pattern': '^[0-9]*$',
    'minimum': 1,
    'maximum': 2147483647,
}
_NON_NEG = {
    'type': ['integer', 'string'],
    'pattern': '^[0-9]*$',
    'minimum': 0,
    'maximum': 2147483647,
}
_DESCRIPTION = {'type': ['string', 'null'], 'maxLength': 65535}

CREATE = {
    'type': 'object',
    'properties': {
        'flavor': {
            'type': 'object',
            'properties': {
                'name': common.NAME,
                # As Nova: a string, an integer (kept as its string) or
                # null (a generated uuid). A float such as 1.0 is refused.
                'id': {
                    'type': ['string', 'integer', 'null'],
                    'minLength': 1,
                    'maxLength': 255,
                    'pattern': r'^(?! )[a-zA-Z0-9. _-]+(?<! )$',
                },
                'ram': _POS,
                'vcpus': _POS,
                'disk': _NON_NEG,
                'OS-FLV-EXT-DATA:ephemeral': _NON_NEG,
                'swap': _NON_NEG,
                'rxtx_factor': {
                    'type': ['number', 'string'],
                    'pattern': r'^[0-9]+(\.[0-9]+)?$',
                    'minimum': 0,
                    'exclusiveMinimum': 0,
                },
                'os-flavor-access:is_public': common.BOOLEAN,
            },
            'required': ['name', 'ram', 'vcpus', 'disk'],
            'additionalProperties': False,
        }
    },
    'required': ['flavor'],
    'additionalProperties': False,
}

CREATE_V255 = copy.deepcopy(CREATE)
CREATE_V255['properties']['flavor']['properties']['description'] = _DESCRIPTION

UPDATE = {
    'type': 'object',
    'properties': {
        'flavor': {
            'type': 'object',
            'properties': {'description': _DESCRIPTION},
            'required': ['description'],
            'additionalProperties': False,
        }
    },
    'required': ['flavor'],
    'additionalProperties': False,
}

INDEX_QUERY = {
    'type': 'object',
    'properties': dict(
        common.PAGING,
        **{
            'is_public': {'type': 'string'},
            'minRam': common.NON_NEG_INT_STR,
            'minDisk': common.NON_NEG_INT_STR,
            'sort_key': {
                'type': 'string',
                'enum': [
                    'created_at',
                    'description',
                    'disabled',
                    'ephemeral_gb',
                    'flavorid',
                    'id',
                    'is_public',
                    'memory_mb',
                    'name',
                    'root_gb',
                    'rxtx_factor',
                    'swap',
                    'updated_at',
                    'vcpus',
                ],
            },
            'sort_dir': {'type': 'string', 'enum': ['asc', 'desc']},
        },
    ),
}

_SPEC_KEY = r'^[a-zA-Z0-9-_:. /]{1,255}$'
_SPEC_VALUE = {
    'type': ['string', 'integer', 'number', 'boolean'],
    'minLength': 0,
    'maxLength': 255,
}

EXTRA_SPECS = {
    'type': 'object',
    'properties': {
        'extra_specs': {
            'type': 'object',
            'patternProperties': {_SPEC_KEY: _SPEC_VALUE},
            'additionalProperties': False,
        }
    },
    'required': ['extra_specs'],
    'additionalProperties': False,
}

EXTRA_SPEC_ONE = {
    'type': 'object',
    'patternProperties': {_SPEC_KEY: _SPEC_VALUE},
    'minProperties': 1,
    'maxProperties': 1,
    'additionalProperties': False,
}
