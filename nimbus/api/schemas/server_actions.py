"""Schemas of the server actions (POST /servers/{id}/action): one per
action body, some per microversion (:func:`action_schema`)."""

import functools

from nimbus.api.schemas import common
from nimbus.api.schemas import server_moves_shelve


from nimbus.api.schemas import server_live_migrate
from nimbus.api.schemas import server_resize

_REBOOT = {
    'type': 'object',
    'properties': {
        'type': {
            'type': 'string',
            'enum': ['HARD', 'Hard', 'hard', 'SOFT', 'Soft', 'soft'],
        }
    },
    'required': ['type'],
    'additionalProperties': False,
}

_RESET_STATE = {
    'type': 'object',
    'properties': {'state': {'type': 'string', 'enum': ['active', 'error']}},
    'required': ['state'],
    'additionalProperties': False,
}

_LOCK_273 = {
    'oneOf': [
        {'type': 'null'},
        {
            'type': 'object',
            'properties': {
                'locked_reason': {
                    'type': 'string',
                    'minLength': 1,
                    'maxLength': 255,
                }
            },
            'additionalProperties': False,
        },
    ]
}

_RESCUE = {
    'oneOf': [
        {'type': 'null'},
        {
            'type': 'object',
            'properties': {
                'adminPass': {'type': 'string'},
                'rescue_image_ref': common.UUID,
            },
            'additionalProperties': False,
        },
    ]
}

_CONSOLE_OUTPUT = {
    'type': 'object',
    'properties': {
        'length': {
            'type': ['integer', 'string', 'null'],
            'pattern': '^-?[0-9]+$',
            'minimum': -1,
        }
    },
    'additionalProperties': False,
}

_CHANGE_PASSWORD = {
    'type': 'object',
    'properties': {'adminPass': {'type': 'string'}},
    'required': ['adminPass'],
    'additionalProperties': False,
}

_HOSTNAME = {
    'type': 'string',
    'minLength': 1,
    'maxLength': 255,
    'pattern': r'^[a-zA-Z0-9][a-zA-Z0-9.-]*$',
}


def _rebuild(version):
    props = {
        'imageRef': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'name': common.NAME,
        'adminPass': {'type': 'string'},
        'metadata': common.METADATA,
        'preserve_ephemeral': {'type': 'boolean'},
        'OS-DCF:diskConfig': {'type': 'string', 'enum': ['AUTO', 'MANUAL']},
        'accessIPv4': {'type': 'string', 'format': 'ipv4'},
        'accessIPv6': {'type': 'string', 'format': 'ipv6'},
    }
    if version < (2, 57):
        props['personality'] = {
            'type': 'array',
            'items': {
                'type': 'object',
                'properties': {
                    'path': {'type': 'string'},
                    'contents': {'type': 'string', 'format': 'base64'},
                },
                'additionalProperties': False,
            },
        }
    if version >= (2, 19):
        props['description'] = {'type': ['string', 'null'], 'maxLength': 255}
    if version >= (2, 54):
        props['key_name'] = {
            'type': ['string', 'null'],
            'minLength': 1,
            'maxLength': 255,
        }
    if version >= (2, 57):
        props['user_data'] = {
            'type': ['string', 'null'],
            'format': 'base64',
            'maxLength': 65535,
        }
    if version >= (2, 90):
        props['hostname'] = _HOSTNAME
    return {
        'type': 'object',
        'properties': props,
        'required': ['imageRef'],
        'additionalProperties': False,
    }


_CREATE_IMAGE = {
    'type': 'object',
    'properties': {'name': common.NAME, 'metadata': common.METADATA},
    'required': ['name'],
    'additionalProperties': False,
}

# Nova's createBackup: rotation an integer of 0 or more (or its digits).
_CREATE_BACKUP = {
    'type': 'object',
    'properties': {
        'name': common.NAME,
        'backup_type': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'rotation': {
            'oneOf': [
                {'type': 'integer', 'minimum': 0},
                common.NON_NEG_INT_STR,
            ]
        },
        'metadata': common.METADATA,
    },
    'required': ['name', 'backup_type', 'rotation'],
    'additionalProperties': False,
}

# Actions whose body is null at every microversion.
_NULL_ACTIONS = (
    'os-stop',
    'os-start',
    'pause',
    'unpause',
    'suspend',
    'resume',
    'unlock',
    'unrescue',
    'restore',
    'forceDelete',
)


@functools.lru_cache(maxsize=512)
def action_schema(name, version):
    """The schema of action ``name``'s value at ``version``; None for an
    action this API does not have. One object per (action, version), as
    the create schema."""
    if name in _NULL_ACTIONS:
        return common.NO_BODY
    if name == 'lock':
        return _LOCK_273 if version >= (2, 73) else common.NO_BODY
    fixed = {
        'reboot': _REBOOT,
        'os-resetState': _RESET_STATE,
        'rescue': _RESCUE,
        'os-getConsoleOutput': _CONSOLE_OUTPUT,
        'changePassword': _CHANGE_PASSWORD,
        'createImage': _CREATE_IMAGE,
        'createBackup': _CREATE_BACKUP,
    }
    if name in fixed:
        return fixed[name]
    if name == 'rebuild':
        return _rebuild(version)
    if name in server_moves_shelve.NAMES:
        return server_moves_shelve.action_schema(name, version)
    if name in server_live_migrate.NAMES:
        return server_live_migrate.action_schema(name, version)
    return server_resize.action_schema(name, version)


ACTION_NAMES = (
    _NULL_ACTIONS
    + ('lock', 'reboot', 'os-resetState', 'rescue', 'os-getConsoleOutput')
    + ('changePassword', 'rebuild', 'createImage', 'createBackup')
    + server_moves_shelve.NAMES
    + server_resize.NAMES
    + server_live_migrate.NAMES
)


@functools.lru_cache(maxsize=64)
def body_schema(version):
    """The whole body of POST /servers/{id}/action at ``version``: one
    action (the OpenAPI document describes it; the handler checks the
    action's value with :func:`action_schema`)."""
    return {
        'type': 'object',
        'properties': {
            name: action_schema(name, version) for name in ACTION_NAMES
        },
        'minProperties': 1,
        'maxProperties': 1,
        'additionalProperties': False,
    }
