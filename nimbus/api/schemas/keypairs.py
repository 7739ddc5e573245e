"""Schemas of /os-keypairs, by microversion as Nova's.

2.2 adds ``type`` (ssh or x509), 2.10 ``user_id`` (an admin acts for
another user), 2.35 paging of the list, 2.92 makes ``public_key`` required
(no more generated keys) and lets names hold ``@`` and ``.``.
"""

import copy

from nimbus.api.objects import keypair_crypto
from nimbus.api.schemas import common

_USER_ID = {'type': 'string', 'minLength': 1, 'maxLength': 255}


def _create(version):
    # A key longer than the column (TEXT) holds is refused, not a 500.
    props = {
        'name': common.NAME,
        'public_key': {'type': 'string', 'maxLength': 65535},
    }
    if version >= (2, 2):
        props['type'] = {'type': 'string', 'enum': list(keypair_crypto.TYPES)}
    if version >= (2, 10):
        props['user_id'] = _USER_ID
    required = ['name']
    if version >= (2, 92):
        required.append('public_key')
    return {
        'type': 'object',
        'properties': {
            'keypair': {
                'type': 'object',
                'properties': props,
                'required': required,
                'additionalProperties': False,
            }
        },
        'required': ['keypair'],
        'additionalProperties': False,
    }


def create_schema(version):
    return copy.deepcopy(_create(version))


def name_chars(version):
    """The characters a key pair name may hold (Nova checks them after
    the schema)."""
    extra = '@.' if version >= (2, 92) else ''
    return frozenset(
        'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_- '
        + extra
    )


def query_schema(version, listing=False):
    """Query strings: ``user_id`` from 2.10, ``limit``/``marker`` on the
    list from 2.35; other keys are ignored."""
    props = {}
    if version >= (2, 10):
        props['user_id'] = _USER_ID
    if listing and version >= (2, 35):
        props.update(common.PAGING)
    return {'type': 'object', 'properties': props}
