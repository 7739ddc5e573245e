"""Schemas of /os-aggregates."""

from nimbus.api.schemas import common

_AZ = {
    'type': ['string', 'null'],
    'minLength': 1,
    'maxLength': 255,
    'pattern': r'^[^:\x00-\x1f\x7f]*$',
}
_HOST = {
    'type': 'object',
    'properties': {'host': common.NAME_LOOSE},
    'required': ['host'],
    'additionalProperties': False,
}

CREATE = {
    'type': 'object',
    'properties': {
        'aggregate': {
            'type': 'object',
            'properties': {'name': common.NAME, 'availability_zone': _AZ},
            'required': ['name'],
            'additionalProperties': False,
        }
    },
    'required': ['aggregate'],
    'additionalProperties': False,
}

UPDATE = {
    'type': 'object',
    'properties': {
        'aggregate': {
            'type': 'object',
            'properties': {'name': common.NAME, 'availability_zone': _AZ},
            'minProperties': 1,
            'additionalProperties': False,
        }
    },
    'required': ['aggregate'],
    'additionalProperties': False,
}

ACTION = {
    'type': 'object',
    'properties': {
        'add_host': _HOST,
        'remove_host': _HOST,
        'set_metadata': {
            'type': 'object',
            'properties': {
                'metadata': {
                    'type': 'object',
                    'patternProperties': {
                        r'^[a-zA-Z0-9-_:. /]{1,255}$': {
                            'type': ['string', 'null'],
                            'maxLength': 255,
                        }
                    },
                    'additionalProperties': False,
                }
            },
            'required': ['metadata'],
            'additionalProperties': False,
        },
    },
    'minProperties': 1,
    'maxProperties': 1,
    'additionalProperties': False,
}
