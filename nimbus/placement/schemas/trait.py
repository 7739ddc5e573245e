"""JSON schemas of /traits and provider traits."""

CUSTOM_NAME = '^CUSTOM_[A-Z0-9_]+$'
SET_PROVIDER_TRAITS = {
    'type': 'object',
    'properties': {
        # As Placement: any name (an unknown one is "No such trait"), and
        # a name given twice counts once.
        'traits': {
            'type': 'array',
            'items': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        },
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['traits', 'resource_provider_generation'],
    'additionalProperties': False,
}
