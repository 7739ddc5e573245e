"""Schemas of /v2/accelerator_requests."""

UUID = {'type': 'string', 'format': 'uuid'}

CREATE = {
    'type': 'object',
    'properties': {
        'device_profile_name': {
            'type': 'string',
            'minLength': 1,
            'maxLength': 255,
        }
    },
    'required': ['device_profile_name'],
    'additionalProperties': False,
}

BIND_FIELDS = ('hostname', 'device_rp_uuid', 'instance_uuid')


def patch_schema(version):
    """``{arq_uuid: [{"path", "op", "value"}]}``; ``/project_id`` is
    refused below 2.1 by the handler (406, as Cyborg)."""
    paths = ['/' + f for f in BIND_FIELDS] + ['/project_id']
    op = {
        'type': 'object',
        'properties': {
            'path': {'type': 'string', 'enum': paths},
            'op': {'type': 'string', 'enum': ['add', 'remove']},
            'value': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        },
        'required': ['path', 'op'],
        'additionalProperties': False,
    }
    return {
        'type': 'object',
        'minProperties': 1,
        'propertyNames': UUID,
        'additionalProperties': {'type': 'array', 'minItems': 1, 'items': op},
    }
