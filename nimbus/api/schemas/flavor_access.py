"""Schemas of /flavors/{id}/os-flavor-access and the flavor actions."""

_TENANT = {
    'type': 'object',
    'properties': {
        'tenant': {
            'type': 'string',
            'minLength': 1,
            'maxLength': 255,
            'pattern': r'^[^\x00-\x1f\x7f]*$',
        }
    },
    'required': ['tenant'],
    'additionalProperties': False,
}

ACTIONS = ('addTenantAccess', 'removeTenantAccess')

# One action per request: addTenantAccess or removeTenantAccess.
ACTION = {
    'type': 'object',
    'properties': {name: _TENANT for name in ACTIONS},
    'minProperties': 1,
    'maxProperties': 1,
    'additionalProperties': False,
}
