"""JSON schemas of /traits and provider traits."""

CUSTOM_NAME = '^CUSTOM_[A-Z0-9_]+$'
SET_PROVIDER_TRAITS = {
    'type': 'object',
    'properties': {
        'traits': {'type': 'array', 'uniqueItems': True,
                   'items': {'type': 'string', 'pattern': '^[A-Z0-9_]+$',
                             'maxLength': 255}},
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['traits', 'resource_provider_generation'],
    'additionalProperties': False,
}
