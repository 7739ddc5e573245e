"""Default policy rules of live migration (POST /servers/{id}/action
os-migrateLive) and of a server's migrations (/servers/{id}/migrations),
under Nova's names."""

from nimbus.api.policies_base import ADMIN
from nimbus.api.policies_base import rule

_ACTION = [('POST', '/servers/{server_id}/action (os-migrateLive)')]
_MIGRATIONS = '/servers/{server_id}/migrations'

MIGRATE_LIVE = 'os_compute_api:os-migrate-server:migrate_live'
MIGRATE_LIVE_HOST = 'os_compute_api:os-migrate-server:migrate_live:host'
MIGRATIONS_INDEX = 'os_compute_api:servers:migrations:index'
MIGRATIONS_SHOW = 'os_compute_api:servers:migrations:show'
MIGRATIONS_DELETE = 'os_compute_api:servers:migrations:delete'
MIGRATIONS_FORCE = 'os_compute_api:servers:migrations:force_complete'

RULES = [
    rule(
        MIGRATE_LIVE,
        ADMIN,
        'Live migrate a server to a new host without a reboot, the '
        'scheduler choosing the host (os-migrateLive).',
        _ACTION,
    ),
    rule(
        MIGRATE_LIVE_HOST,
        ADMIN,
        'Live migrate a server to a host of your choice (os-migrateLive '
        'with a host; still checked by the scheduler).',
        _ACTION,
    ),
    rule(
        MIGRATIONS_INDEX,
        ADMIN,
        "List a server's live migrations in progress (2.23).",
        [('GET', _MIGRATIONS)],
    ),
    rule(
        MIGRATIONS_SHOW,
        ADMIN,
        "Show one of a server's live migrations in progress (2.23).",
        [('GET', _MIGRATIONS + '/{migration_id}')],
    ),
    rule(
        MIGRATIONS_DELETE,
        ADMIN,
        "Abort a server's live migration (2.24).",
        [('DELETE', _MIGRATIONS + '/{migration_id}')],
    ),
    rule(
        MIGRATIONS_FORCE,
        ADMIN,
        "Force a server's running live migration to complete (2.22).",
        [('POST', _MIGRATIONS + '/{migration_id}/action (force_complete)')],
    ),
]
