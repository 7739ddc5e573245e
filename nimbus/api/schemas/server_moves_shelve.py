"""Schemas of shelve, shelveOffload, unshelve (2.77, 2.91) and evacuate
(2.14, 2.29, 2.68) action bodies, as Nova's."""

from nimbus.api.schemas import common

NAMES = ('shelve', 'shelveOffload', 'unshelve', 'evacuate')

_ZONE = {'type': 'string', 'minLength': 1, 'maxLength': 255}
_HOST = {
    'type': 'string',
    'minLength': 1,
    'maxLength': 255,
    'pattern': r'^[a-zA-Z0-9_][a-zA-Z0-9_.:-]*$',
}

_UNSHELVE_277 = {
    'oneOf': [
        {'type': 'null'},
        {
            'type': 'object',
            'properties': {'availability_zone': _ZONE},
            'required': ['availability_zone'],
            'additionalProperties': False,
        },
    ]
}

_UNSHELVE_291 = {
    'oneOf': [
        {'type': 'null'},
        {
            'type': 'object',
            'properties': {
                'availability_zone': {'oneOf': [{'type': 'null'}, _ZONE]},
                'host': _HOST,
            },
            'additionalProperties': False,
        },
    ]
}


def _evacuate(version):
    props = {'host': _HOST, 'adminPass': {'type': 'string'}}
    required = []
    if version < (2, 14):
        props['onSharedStorage'] = common.BOOLEAN
        required = ['onSharedStorage']
    if (2, 29) <= version < (2, 68):
        props['force'] = {'type': 'boolean'}
    schema = {
        'type': 'object',
        'properties': props,
        'additionalProperties': False,
    }
    if required:
        schema['required'] = required
    return schema


def action_schema(name, version):
    """The schema of ``name``'s value at ``version`` (one of
    :data:`NAMES`)."""
    if name in ('shelve', 'shelveOffload'):
        return common.NO_BODY
    if name == 'unshelve':
        if version >= (2, 91):
            return _UNSHELVE_291
        if version >= (2, 77):
            return _UNSHELVE_277
        return common.NO_BODY
    if name == 'evacuate':
        return _evacuate(version)
    return None
