"""Request schemas of os-quota-sets and os-quota-class-sets.

A limit is an integer of at least -1 (-1 is unlimited), or that integer
written as a string, as Nova accepts; 1.0 and "1.0" are refused. The
resources a body may name depend on the microversion.
"""

import functools

from nimbus.api.objects import quotas

LIMIT = {
    'type': ['integer', 'string'],
    'pattern': r'^-?[0-9]+$',
    'minimum': -1,
}


def _body(key, names, extra=None):
    props = {name: LIMIT for name in names}
    props.update(extra or {})
    return {
        'type': 'object',
        'properties': {
            key: {
                'type': 'object',
                'properties': props,
                'additionalProperties': False,
            }
        },
        'required': [key],
        'additionalProperties': False,
    }


@functools.lru_cache(maxsize=256)
def quota_set_update(version):
    return _body(
        'quota_set',
        quotas.resources(version),
        {
            'force': {
                'type': ['boolean', 'string'],
                'enum': [
                    True,
                    False,
                    'True',
                    'False',
                    'true',
                    'false',
                    'TRUE',
                    'FALSE',
                    '1',
                    '0',
                ],
            }
        },
    )


def class_resources(version):
    """Quota classes change at 2.50 (server group quotas in, network
    proxies out) rather than at 2.36, and at 2.57 like quota sets."""
    names = set(quotas.OPTIONS)
    if version < (2, 50):
        names.update(quotas.LEGACY)
        names.difference_update(('server_groups', 'server_group_members'))
    if version >= (2, 57):
        names.difference_update(quotas.REMOVED_2_57)
    return sorted(names)


@functools.lru_cache(maxsize=256)
def quota_class_update(version):
    return _body('quota_class_set', class_resources(version))


SHOW_QUERY = {
    'type': 'object',
    'properties': {
        'user_id': {'type': 'string', 'minLength': 1, 'maxLength': 255}
    },
}

LIMITS_QUERY = {
    'type': 'object',
    'properties': {
        'tenant_id': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'reserved': {'type': 'string'},
    },
}
