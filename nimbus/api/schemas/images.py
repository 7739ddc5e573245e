"""Schemas of the Glance-shaped /v2/images subset."""

from nimbus.api.schemas import common

_CORE = {
    'id': common.UUID,
    'name': {'type': ['string', 'null'], 'maxLength': 255},
    'visibility': {
        'type': 'string',
        'enum': ['public', 'private', 'shared', 'community'],
    },
    'container_format': {
        'type': ['string', 'null'],
        'enum': [
            None,
            'ami',
            'ari',
            'aki',
            'bare',
            'ovf',
            'ova',
            'docker',
            'compressed',
        ],
    },
    'disk_format': {
        'type': ['string', 'null'],
        'enum': [
            None,
            'ami',
            'ari',
            'aki',
            'vhd',
            'vhdx',
            'vmdk',
            'raw',
            'qcow2',
            'vdi',
            'iso',
            'ploop',
        ],
    },
    # Stored in 32-bit columns (a larger value was a 500 on MariaDB).
    'min_disk': {'type': 'integer', 'minimum': 0, 'maximum': 2147483647},
    'min_ram': {'type': 'integer', 'minimum': 0, 'maximum': 2147483647},
    'protected': {'type': 'boolean'},
    'os_hidden': {'type': 'boolean'},
    'tags': {'type': 'array', 'items': {'type': 'string', 'maxLength': 255}},
}
CORE_KEYS = set(_CORE)
READ_ONLY = {
    'status',
    'owner',
    'size',
    'checksum',
    'created_at',
    'updated_at',
    'self',
    'file',
    'schema',
    'virtual_size',
    'direct_url',
    'locations',
    'os_hash_algo',
    'os_hash_value',
}

CREATE = {
    'type': 'object',
    'properties': _CORE,
    'propertyNames': {'pattern': r'^[a-zA-Z0-9_:.-]{1,255}$'},
    'additionalProperties': {'type': 'string', 'maxLength': 65535},
}

UPDATE = {
    'type': 'object',
    'properties': {k: v for k, v in _CORE.items() if k != 'id'},
    'propertyNames': {'pattern': r'^[a-zA-Z0-9_:.-]{1,255}$'},
    'additionalProperties': {'type': ['string', 'null'], 'maxLength': 65535},
}

PATCH = {
    'type': 'array',
    'items': {
        'type': 'object',
        'properties': {
            'op': {'type': 'string', 'enum': ['add', 'replace', 'remove']},
            'path': {
                'type': 'string',
                'pattern': r'^/[a-zA-Z0-9_:.-]{1,255}$',
            },
            'value': {},
        },
        'required': ['op', 'path'],
        'additionalProperties': False,
    },
}

# Glance's older patch media type (openstack-images-v2.0-json-patch):
# the operation is the key that holds the path, {"add": "/k", "value": v}.
_PATH = PATCH['items']['properties']['path']
PATCH_V20 = {
    'type': 'array',
    'items': {
        'type': 'object',
        'properties': {
            'add': _PATH,
            'replace': _PATH,
            'remove': _PATH,
            'value': {},
        },
        'oneOf': [
            {'required': ['add']},
            {'required': ['replace']},
            {'required': ['remove']},
        ],
        'additionalProperties': False,
    },
}

INDEX_QUERY = {
    'type': 'object',
    'properties': dict(
        common.PAGING,
        **{
            'name': {'type': 'string'},
            'visibility': {
                'type': 'string',
                'enum': ['public', 'private', 'shared', 'community', 'all'],
            },
            'status': {'type': 'string'},
            'sort_key': {
                'type': 'string',
                'enum': [
                    'created_at',
                    'updated_at',
                    'name',
                    'id',
                    'status',
                    'size',
                ],
            },
            'sort_dir': {'type': 'string', 'enum': ['asc', 'desc']},
        },
    ),
    # Any other parameter filters on the property of its name, as in
    # Glance (image_type=backup&instance_uuid=...).
    'additionalProperties': {'type': 'string'},
}
