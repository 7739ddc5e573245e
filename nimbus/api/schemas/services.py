"""Schemas of /os-services."""

from nimbus.api.schemas import common

_REASON = {
    'type': 'string',
    'minLength': 1,
    'maxLength': 255,
    'pattern': r'^[^\x00-\x1f\x7f]*$',
}

UPDATE_V253 = {
    'type': 'object',
    'properties': {
        'status': {'type': 'string', 'enum': ['enabled', 'disabled']},
        'disabled_reason': _REASON,
        'forced_down': {'type': 'boolean'},
    },
    'minProperties': 1,
    'additionalProperties': False,
}

UPDATE_LEGACY = {
    'type': 'object',
    'properties': {
        'host': common.NAME_LOOSE,
        'binary': common.NAME_LOOSE,
        'disabled_reason': _REASON,
        'forced_down': {'type': 'boolean'},
    },
    'required': ['host', 'binary'],
    'additionalProperties': False,
}

LIST_QUERY = {
    'type': 'object',
    'properties': {'host': {'type': 'string'}, 'binary': {'type': 'string'}},
}
