"""JSON schemas of /resource_classes."""

CUSTOM_NAME = {
    'type': 'string',
    'pattern': '^CUSTOM_[A-Z0-9_]+$',
    'maxLength': 255,
}
POST = {
    'type': 'object',
    'properties': {'name': CUSTOM_NAME},
    'required': ['name'],
    'additionalProperties': False,
}
PUT_1_2 = POST
