"""Schemas of /v2/attributes."""

CREATE = {
    'type': 'object',
    'properties': {
        'deployable_id': {'type': 'integer', 'minimum': 1},
        'key': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'value': {'type': 'string', 'maxLength': 255},
    },
    'required': ['deployable_id', 'key', 'value'],
    'additionalProperties': False,
}
