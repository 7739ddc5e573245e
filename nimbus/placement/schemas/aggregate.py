"""JSON schemas of /resource_providers/{uuid}/aggregates."""

from nimbus.placement.schemas.common import UUID_RE

_LIST = {
    'type': 'array',
    'uniqueItems': True,
    'items': {'type': 'string', 'pattern': UUID_RE},
}
PUT_1_1 = _LIST
PUT_1_19 = {
    'type': 'object',
    'properties': {
        'aggregates': _LIST,
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['aggregates', 'resource_provider_generation'],
    'additionalProperties': False,
}
