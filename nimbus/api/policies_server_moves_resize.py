"""Default policy rules of resize and cold migrate (POST
/servers/{id}/action), under Nova's names."""

from nimbus.api.policies_base import ADMIN
from nimbus.api.policies_base import OWNER_OR_ADMIN
from nimbus.api.policies_base import rule

_ACTION = [('POST', '/servers/{server_id}/action')]

RESIZE = 'os_compute_api:servers:resize'
CONFIRM_RESIZE = 'os_compute_api:servers:confirm_resize'
REVERT_RESIZE = 'os_compute_api:servers:revert_resize'
MIGRATE = 'os_compute_api:os-migrate-server:migrate'
MIGRATE_HOST = 'os_compute_api:os-migrate-server:migrate:host'
# Nova's name (no os_compute_api prefix) and default: nobody.
CROSS_CELL = 'compute:servers:resize:cross_cell'

# One declared rule per policy name (a contract: each names its own
# check, text and operations); alike by design.
RULES = [
    rule(RESIZE, OWNER_OR_ADMIN, 'Resize a server (resize).', _ACTION),
    rule(
        CONFIRM_RESIZE,
        OWNER_OR_ADMIN,
        'Confirm a resized or cold migrated server (confirmResize).',
        _ACTION,
    ),
    rule(
        REVERT_RESIZE,
        OWNER_OR_ADMIN,
        'Revert a resized or cold migrated server (revertResize).',
        _ACTION,
    ),
    rule(MIGRATE, ADMIN, 'Cold migrate a server (migrate).', _ACTION),
    rule(
        MIGRATE_HOST,
        ADMIN,
        'Cold migrate a server to a host of your choice (migrate with a '
        'host, 2.56).',
        _ACTION,
    ),
    rule(
        CROSS_CELL,
        '!',
        'Let a resize or cold migrate of a server choose a host of another '
        'cell (checked without failing the request: denied, the move stays '
        "in the server's cell). Nobody by default, as Nova.",
        _ACTION,
    ),
]
