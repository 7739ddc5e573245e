"""Schemas of os-migrateLive (POST /servers/{id}/action) and of the
force complete of a server's migration (POST
/servers/{id}/migrations/{id}/action), as Nova's v2.1 API takes them:

- below 2.25: ``block_migration`` and ``disk_over_commit`` (booleans) and
  ``host`` (a name or null), all three required;
- 2.25: ``disk_over_commit`` is gone, ``block_migration`` may be
  ``"auto"``;
- 2.30 to 2.67: ``force`` (a boolean) may come too;
- 2.68: ``force`` is gone again (a chosen host is always filtered).
"""

import copy

from nimbus.api.schemas import common

NAMES = ('os-migrateLive',)

_HOST = {
    'type': ['string', 'null'],
    'minLength': 1,
    'maxLength': 255,
    'pattern': r'^[a-zA-Z0-9_][a-zA-Z0-9_.:-]*$',
}

MIGRATE_LIVE = {
    'type': 'object',
    'properties': {
        'block_migration': common.BOOLEAN,
        'disk_over_commit': common.BOOLEAN,
        'host': _HOST,
    },
    'required': ['block_migration', 'disk_over_commit', 'host'],
    'additionalProperties': False,
}

_AUTO = copy.deepcopy(common.BOOLEAN)
_AUTO['enum'] = list(_AUTO['enum']) + ['auto']

MIGRATE_LIVE_225 = {
    'type': 'object',
    'properties': {'block_migration': _AUTO, 'host': _HOST},
    'required': ['block_migration', 'host'],
    'additionalProperties': False,
}

MIGRATE_LIVE_230 = copy.deepcopy(MIGRATE_LIVE_225)
MIGRATE_LIVE_230['properties']['force'] = common.BOOLEAN

MIGRATE_LIVE_268 = MIGRATE_LIVE_225

# POST /servers/{id}/migrations/{id}/action (2.22).
FORCE_COMPLETE = {
    'type': 'object',
    'properties': {'force_complete': {'type': 'null'}},
    'required': ['force_complete'],
    'additionalProperties': False,
}


def action_schema(name, version):
    """The schema of ``name``'s value at ``version`` (a tuple); None for
    another action."""
    if name != 'os-migrateLive':
        return None
    if version >= (2, 68):
        return MIGRATE_LIVE_268
    if version >= (2, 30):
        return MIGRATE_LIVE_230
    if version >= (2, 25):
        return MIGRATE_LIVE_225
    return MIGRATE_LIVE
