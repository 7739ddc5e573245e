"""Schemas of /servers."""

import copy
import functools

from nimbus.api.schemas import common
from nimbus.common import instance_states as states

_COUNT = {
    'type': ['integer', 'string'],
    'pattern': '^[0-9]*$',
    'minimum': 1,
    'minLength': 1,
}
_UUID_OR_LIST = {
    'oneOf': [common.UUID, {'type': 'array', 'items': common.UUID}]
}

HINTS = {
    'type': 'object',
    'properties': {
        'group': common.UUID,
        'same_host': _UUID_OR_LIST,
        'different_host': _UUID_OR_LIST,
        'query': {'type': ['string', 'object', 'array']},
        'build_near_host_ip': {'type': 'string', 'format': 'ipv4'},
        'cidr': {'type': 'string', 'pattern': r'^/[0-9a-f.:]+$'},
        'cidr_mask': {
            'type': ['string', 'integer'],
            'pattern': r'^/?[0-9]{1,3}$',
        },
        'target_cell': {'type': 'string', 'minLength': 1, 'maxLength': 255},
    },
    'additionalProperties': True,
}

_NETWORK = {
    'type': 'object',
    'properties': {
        'uuid': {'type': 'string'},
        'port': {'type': ['string', 'null']},
        'fixed_ip': {'type': 'string'},
        'tag': {'type': 'string'},
    },
    'additionalProperties': False,
}

SERVER = {
    'type': 'object',
    'properties': {
        'name': common.NAME,
        'imageRef': {'type': 'string', 'maxLength': 255},
        'flavorRef': {'type': ['string', 'integer'], 'minLength': 1},
        'adminPass': {'type': 'string'},
        'metadata': common.METADATA,
        'networks': {
            'oneOf': [
                {'type': 'string', 'enum': ['none', 'auto']},
                {'type': 'array', 'items': _NETWORK},
            ]
        },
        'min_count': _COUNT,
        'max_count': _COUNT,
        'return_reservation_id': {'type': ['boolean', 'string']},
        'availability_zone': {
            'type': 'string',
            'minLength': 1,
            'maxLength': 255,
        },
        'key_name': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'user_data': {
            'type': 'string',
            'format': 'base64',
            'maxLength': 65535,
        },
        'security_groups': {
            'type': 'array',
            'items': {
                'type': 'object',
                'properties': {'name': {'type': 'string'}},
                'additionalProperties': False,
            },
        },
        'config_drive': {'type': ['boolean', 'string']},
        'accessIPv4': {'type': 'string', 'format': 'ipv4'},
        'accessIPv6': {'type': 'string', 'format': 'ipv6'},
        'OS-DCF:diskConfig': {'type': 'string', 'enum': ['AUTO', 'MANUAL']},
        'block_device_mapping_v2': {
            'type': 'array',
            'items': {'type': 'object'},
        },
        'personality': {'type': 'array'},
    },
    'required': ['name', 'flavorRef'],
    'additionalProperties': False,
}

CREATE = {
    'type': 'object',
    'properties': {
        'server': SERVER,
        'os:scheduler_hints': HINTS,
        'OS-SCH-HNT:scheduler_hints': HINTS,
    },
    'required': ['server'],
    'additionalProperties': False,
}


def count_error(server, limit):
    """The 400 message for a ``server`` body whose counts exceed ``limit``
    (``[api] max_instances_per_request``) or contradict each other, or
    None. A count given as a float (``1e+20`` is what JSON readers make of
    a very long integer) is held to the limit too, so the message names
    the limit; that it is not an integer is the schema's 400."""
    counts = {}
    for field in ('min_count', 'max_count'):
        value = server.get(field)
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)) or (
            isinstance(value, str) and value.isdigit()
        ):
            counts[field] = (
                float(value) if isinstance(value, float) else int(value)
            )
    for field in ('max_count', 'min_count'):
        if counts.get(field, 0) > limit:
            return (
                'Invalid input for field/attribute %s. Value: %s. At '
                'most %d instances may be requested at once '
                '([api] max_instances_per_request).'
                % (field, server[field], limit)
            )
    if (
        'min_count' in counts
        and 'max_count' in counts
        and counts['min_count'] > counts['max_count']
    ):
        return 'min_count must be <= max_count'
    return None


@functools.lru_cache(maxsize=256)
def create_schema(version):
    """The POST /servers schema at a microversion: one object per
    microversion, never to be changed by callers. (Built afresh for each
    request, every schema got a validator of its own in the validation
    cache, which grew nimbus-api by about 12 KB a boot; the soak found
    it.)"""
    schema = copy.deepcopy(CREATE)
    props = schema['properties']['server']['properties']
    if version >= (2, 19):
        props['description'] = {'type': ['string', 'null'], 'maxLength': 255}
    if version >= (2, 52):
        props['tags'] = {
            'type': 'array',
            'maxItems': 50,
            'items': {
                'type': 'string',
                'minLength': 1,
                'maxLength': 60,
                'pattern': '^[^,/]*$',
            },
        }
    if version >= (2, 74):
        props['host'] = {'type': 'string', 'minLength': 1, 'maxLength': 255}
        props['hypervisor_hostname'] = {
            'type': 'string',
            'minLength': 1,
            'maxLength': 255,
        }
    if version >= (2, 90):
        props['hostname'] = {
            'type': 'string',
            'minLength': 1,
            'maxLength': 255,
            'pattern': r'^[a-zA-Z0-9][a-zA-Z0-9.-]*$',
        }
    return schema


# Every status a server can show (the vm_states' own; task statuses
# such as REBOOT are not filters, as in Nova).
_STATUSES = sorted(set(states.API_STATUS.values()))

LIST_QUERY = {
    'type': 'object',
    'properties': dict(
        common.PAGING,
        **{
            'name': {'type': 'string'},
            'status': {
                'type': 'string',
                'enum': _STATUSES + [s.lower() for s in _STATUSES],
            },
            'host': {'type': 'string'},
            'node': {'type': 'string'},
            'all_tenants': {'type': 'string'},
            'project_id': {'type': 'string'},
            'tenant_id': {'type': 'string'},
            'user_id': {'type': 'string'},
            'image': {'type': 'string'},
            'flavor': {'type': 'string'},
            'availability_zone': {'type': 'string'},
            'reservation_id': {'type': 'string'},
            'deleted': {'type': 'string'},
            # The keys api.objects.server_list sorts on (with the uuid).
            'sort_key': {
                'type': 'string',
                'enum': [
                    'created_at',
                    'display_name',
                    'uuid',
                    'updated_at',
                    'host',
                    'vm_state',
                    'availability_zone',
                ],
            },
            'sort_dir': {'type': 'string', 'enum': ['asc', 'desc']},
            # ISO 8601 times, parsed by the handler (400 when they are not);
            # changes-before from 2.66.
            'changes-since': {'type': 'string', 'maxLength': 64},
            'changes-before': {'type': 'string', 'maxLength': 64},
        },
    ),
}


@functools.lru_cache(maxsize=256)
def update_schema(version):
    """The PUT /servers/{id} schema at a microversion (one object per
    microversion, as :func:`create_schema`)."""
    props = {
        'name': common.NAME,
        'accessIPv4': {'type': 'string', 'format': 'ipv4'},
        'accessIPv6': {'type': 'string', 'format': 'ipv6'},
        'OS-DCF:diskConfig': {'type': 'string', 'enum': ['AUTO', 'MANUAL']},
    }
    if version >= (2, 19):
        props['description'] = {'type': ['string', 'null'], 'maxLength': 255}
    if version >= (2, 90):
        props['hostname'] = {
            'type': 'string',
            'minLength': 1,
            'maxLength': 255,
            'pattern': r'^[a-zA-Z0-9][a-zA-Z0-9.-]*$',
        }
    return {
        'type': 'object',
        'properties': {
            'server': {
                'type': 'object',
                'properties': props,
                'additionalProperties': False,
            }
        },
        'required': ['server'],
        'additionalProperties': False,
    }
