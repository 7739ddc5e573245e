"""Default policy rules of the server actions (POST /servers/{id}/action),
os-instance-actions and server diagnostics, under Nova's names."""

from nimbus.api.policies_base import ADMIN
from nimbus.api.policies_base import OWNER_OR_ADMIN
from nimbus.api.policies_base import READER_OR_ADMIN
from nimbus.api.policies_base import rule

_ACTION = [('POST', '/servers/{server_id}/action')]

STOP = 'os_compute_api:servers:stop'
START = 'os_compute_api:servers:start'
REBOOT = 'os_compute_api:servers:reboot'
REBUILD = 'os_compute_api:servers:rebuild'
CREATE_IMAGE = 'os_compute_api:servers:create_image'
CREATE_BACKUP = 'os_compute_api:os-create-backup'
PAUSE = 'os_compute_api:os-pause-server:%s'
SUSPEND = 'os_compute_api:os-suspend-server:%s'
LOCK = 'os_compute_api:os-lock-server:%s'
RESET_STATE = 'os_compute_api:os-admin-actions:reset_state'
RESCUE = 'os_compute_api:os-rescue'
UNRESCUE = 'os_compute_api:os-unrescue'
CONSOLE_OUTPUT = 'os_compute_api:os-console-output'
ADMIN_PASSWORD = 'os_compute_api:os-admin-password'
DIAGNOSTICS = 'os_compute_api:os-server-diagnostics'
DEFERRED_DELETE = 'os_compute_api:os-deferred-delete:%s'
INSTANCE_ACTIONS = 'os_compute_api:os-instance-actions:%s'

# One declared rule per policy name (a contract: each names its own
# check, text and operations); alike by design.
RULES = [
    rule(STOP, OWNER_OR_ADMIN, 'Stop a server (os-stop).', _ACTION),
    rule(START, OWNER_OR_ADMIN, 'Start a server (os-start).', _ACTION),
    rule(REBOOT, OWNER_OR_ADMIN, 'Reboot a server (reboot).', _ACTION),
    rule(REBUILD, OWNER_OR_ADMIN, 'Rebuild a server (rebuild).', _ACTION),
    rule(
        CREATE_IMAGE,
        OWNER_OR_ADMIN,
        'Snapshot a server into an image (createImage).',
        _ACTION,
    ),
    rule(
        CREATE_BACKUP,
        OWNER_OR_ADMIN,
        'Back a server up into an image, keeping the newest few of its '
        'backups of a type (createBackup).',
        _ACTION,
    ),
    rule(PAUSE % 'pause', OWNER_OR_ADMIN, 'Pause a server.', _ACTION),
    rule(PAUSE % 'unpause', OWNER_OR_ADMIN, 'Unpause a server.', _ACTION),
    rule(SUSPEND % 'suspend', OWNER_OR_ADMIN, 'Suspend a server.', _ACTION),
    rule(SUSPEND % 'resume', OWNER_OR_ADMIN, 'Resume a server.', _ACTION),
    rule(LOCK % 'lock', OWNER_OR_ADMIN, 'Lock a server.', _ACTION),
    rule(
        LOCK % 'unlock',
        OWNER_OR_ADMIN,
        'Unlock a server the same kind of user locked.',
        _ACTION,
    ),
    rule(
        LOCK % 'unlock:unlock_override',
        ADMIN,
        'Unlock a server another kind of user locked (an owner-locked '
        'server by an admin of another project, or an admin-locked one by '
        'its owner).',
        _ACTION,
    ),
    rule(
        RESET_STATE,
        ADMIN,
        'Reset the state of a server (os-resetState).',
        _ACTION,
    ),
    rule(RESCUE, OWNER_OR_ADMIN, 'Rescue a server.', _ACTION),
    rule(UNRESCUE, OWNER_OR_ADMIN, 'Unrescue a server.', _ACTION),
    rule(
        CONSOLE_OUTPUT,
        OWNER_OR_ADMIN,
        'Show the console output of a server (os-getConsoleOutput).',
        _ACTION,
    ),
    rule(
        ADMIN_PASSWORD,
        OWNER_OR_ADMIN,
        'Change the administrator password of a server (changePassword).',
        _ACTION,
    ),
    rule(
        DIAGNOSTICS,
        ADMIN,
        'Show the diagnostics of a server.',
        [('GET', '/servers/{server_id}/diagnostics')],
    ),
    rule(
        DEFERRED_DELETE % 'restore',
        OWNER_OR_ADMIN,
        'Restore a soft-deleted server.',
        _ACTION,
    ),
    rule(
        DEFERRED_DELETE % 'force',
        OWNER_OR_ADMIN,
        'Delete a soft-deleted server at once (forceDelete).',
        _ACTION,
    ),
    rule(
        INSTANCE_ACTIONS % 'list',
        READER_OR_ADMIN,
        'List the actions of a server.',
        [('GET', '/servers/{server_id}/os-instance-actions')],
    ),
    rule(
        INSTANCE_ACTIONS % 'show',
        READER_OR_ADMIN,
        'Show an action of a server.',
        [('GET', '/servers/{server_id}/os-instance-actions/{request_id}')],
    ),
    rule(
        INSTANCE_ACTIONS % 'events',
        ADMIN,
        "See an action's events with their tracebacks.",
        [('GET', '/servers/{server_id}/os-instance-actions/{request_id}')],
    ),
    rule(
        INSTANCE_ACTIONS % 'events:details',
        ADMIN,
        "See the host and details of an action's events (2.84).",
        [('GET', '/servers/{server_id}/os-instance-actions/{request_id}')],
    ),
]
