"""Schemas of resize, confirmResize, revertResize and migrate (POST
/servers/{id}/action), as Nova's v2.1 API takes them."""

from nimbus.api.schemas import common

RESIZE = {
    'type': 'object',
    'properties': {
        'flavorRef': {
            'type': ['string', 'integer'],
            'minLength': 1,
            'pattern': r'^\S',
        },
        'OS-DCF:diskConfig': {'type': 'string', 'enum': ['AUTO', 'MANUAL']},
    },
    'required': ['flavorRef'],
    'additionalProperties': False,
}

# migrate: null before 2.56; from 2.56 also {"host": name or null}.
MIGRATE_256 = {
    'oneOf': [
        {'type': 'null'},
        {
            'type': 'object',
            'properties': {
                'host': {
                    'type': ['string', 'null'],
                    'minLength': 1,
                    'maxLength': 255,
                    'pattern': r'^[^\s].*',
                }
            },
            'additionalProperties': False,
        },
    ]
}

NAMES = ('resize', 'confirmResize', 'revertResize', 'migrate')


def action_schema(name, version):
    """The schema of ``name``'s value at ``version`` (a tuple); None for
    an action that is not one of these."""
    if name == 'resize':
        return RESIZE
    if name in ('confirmResize', 'revertResize'):
        return common.NO_BODY
    if name == 'migrate':
        return MIGRATE_256 if version >= (2, 56) else common.NO_BODY
    return None
