"""The instance state machine: one total transition table.

``vm_state`` is the durable state. Every change is a compare-and-swap in
SQL (:func:`nimbus.db.cell_instances.transition`): the UPDATE names the
states it expects (and, for an action, the task states), so two services
racing on one instance cannot both win. ``task_state`` says what is under
way within a state. The names are Nova's, so clients that read
``OS-EXT-STS:vm_state``/``task_state`` see what they know.

:data:`ACTIONS` says, per server action, from which vm_states (and task
states) the API accepts it, the task it sets, and the vm_state the compute
ends it in: the API's 409 and the compute's final swap both read it.
"""

import dataclasses

BUILDING = 'building'
ACTIVE = 'active'
STOPPED = 'stopped'
PAUSED = 'paused'
SUSPENDED = 'suspended'
RESCUED = 'rescued'
RESIZED = 'resized'  # defined for the moves (issue 24, section 2)
SOFT_DELETED = 'soft-delete'
SHELVED = 'shelved'  # defined for the moves
SHELVED_OFFLOADED = 'shelved_offloaded'  # defined for the moves
ERROR = 'error'
DELETED = 'deleted'

VM_STATES = (
    BUILDING,
    ACTIVE,
    STOPPED,
    PAUSED,
    SUSPENDED,
    RESCUED,
    RESIZED,
    SOFT_DELETED,
    SHELVED,
    SHELVED_OFFLOADED,
    ERROR,
    DELETED,
)

# task states
SCHEDULING = 'scheduling'
SPAWNING = 'spawning'
RESCHEDULING = 'rescheduling'
DELETING = 'deleting'
SOFT_DELETING = 'soft-deleting'
RESTORING = 'restoring'
POWERING_OFF = 'powering-off'
POWERING_ON = 'powering-on'
REBOOTING = 'rebooting'
REBOOT_PENDING = 'reboot_pending'
REBOOT_STARTED = 'reboot_started'
REBOOTING_HARD = 'rebooting_hard'
REBOOT_PENDING_HARD = 'reboot_pending_hard'
REBOOT_STARTED_HARD = 'reboot_started_hard'
PAUSING = 'pausing'
UNPAUSING = 'unpausing'
SUSPENDING = 'suspending'
RESUMING = 'resuming'
REBUILDING = 'rebuilding'
REBUILD_BLOCK_DEVICE_MAPPING = 'rebuild_block_device_mapping'
REBUILD_SPAWNING = 'rebuild_spawning'
RESCUING = 'rescuing'
UNRESCUING = 'unrescuing'
IMAGE_SNAPSHOT = 'image_snapshot'
IMAGE_BACKUP = 'image_backup'
IMAGE_SNAPSHOT_PENDING = 'image_snapshot_pending'
IMAGE_PENDING_UPLOAD = 'image_pending_upload'
IMAGE_UPLOADING = 'image_uploading'
UPDATING_PASSWORD = 'updating_password'
# the moves: shelve, unshelve, evacuate (issue 24, section 2)
SHELVING = 'shelving'
SHELVING_IMAGE_PENDING_UPLOAD = 'shelving_image_pending_upload'
SHELVING_IMAGE_UPLOADING = 'shelving_image_uploading'
SHELVING_OFFLOADING = 'shelving_offloading'
UNSHELVING = 'unshelving'


# resize and cold migrate (issue 24, section 2)
RESIZE_PREP = 'resize_prep'
RESIZE_MIGRATING = 'resize_migrating'
RESIZE_MIGRATED = 'resize_migrated'
RESIZE_FINISH = 'resize_finish'
RESIZE_REVERTING = 'resize_reverting'
RESIZE_CONFIRMING = 'resize_confirming'
RESIZE_TASKS = (RESIZE_PREP, RESIZE_MIGRATING, RESIZE_MIGRATED, RESIZE_FINISH)
# live migration (issue 24, section 2): the one task of the whole move
MIGRATING = 'migrating'

TASK_STATES = (
    None,
    SCHEDULING,
    SPAWNING,
    RESCHEDULING,
    DELETING,
    SOFT_DELETING,
    RESTORING,
    POWERING_OFF,
    POWERING_ON,
    REBOOTING,
    REBOOT_PENDING,
    REBOOT_STARTED,
    REBOOTING_HARD,
    REBOOT_PENDING_HARD,
    REBOOT_STARTED_HARD,
    PAUSING,
    UNPAUSING,
    SUSPENDING,
    RESUMING,
    REBUILDING,
    REBUILD_BLOCK_DEVICE_MAPPING,
    REBUILD_SPAWNING,
    RESCUING,
    UNRESCUING,
    IMAGE_SNAPSHOT,
    IMAGE_BACKUP,
    IMAGE_SNAPSHOT_PENDING,
    IMAGE_PENDING_UPLOAD,
    IMAGE_UPLOADING,
    UPDATING_PASSWORD,
    SHELVING,
    SHELVING_IMAGE_PENDING_UPLOAD,
    SHELVING_IMAGE_UPLOADING,
    SHELVING_OFFLOADING,
    UNSHELVING,
    RESIZE_PREP,
    RESIZE_MIGRATING,
    RESIZE_MIGRATED,
    RESIZE_FINISH,
    RESIZE_REVERTING,
    RESIZE_CONFIRMING,
    MIGRATING,
)

# The states of an instance that holds its host's resources (its guest
# exists there, running or not): a server group member in one of them
# counts for the late group check, and the audit expects its allocation.
# Spelled out like VM_STATES on purpose: a state added there must be
# placed here (or not) by a decision, not by a filter.
HOLDS_HOST = (
    ACTIVE,
    STOPPED,
    PAUSED,
    SUSPENDED,
    RESCUED,
    RESIZED,
    SOFT_DELETED,
    SHELVED,
)

# Nova's power states (what the hypervisor says of the guest).
NOSTATE = 0
RUNNING = 1
PAUSED_POWER = 3
SHUTDOWN = 4
CRASHED = 6
SUSPENDED_POWER = 7

# The transition table, every pair of VM_STATES: a row is the state the
# instance is in, a column the state a swap would take it to; ``x`` allows
# the swap, ``.`` refuses it. Columns, in order: building, active, stopped,
# paused, suspended, rescued, resized, soft-delete, shelved,
# shelved_offloaded, error, deleted.
_GRID = """
building           x x . . . . . . . . x x
active             . x x x x x x x x x x x
stopped            . x x . . x x x x x x x
paused             . x . x . . . x x x x x
suspended          . x . . x . . x x x x x
rescued            . x x . . x . x . . x x
resized            . x x . . . x x . . x x
soft-delete        . x . . . . . x . . x x
shelved            . x . . . . . . x x x x
shelved_offloaded  . x . . . . . . . x x x
error              . x x . . x . x . . x x
deleted            . . . . . . . . . . . x
"""
# Why some cells are what they are:
# - building -> active/error/deleted only: a build ends, fails or is
#   deleted; nothing else happens to it.
# - error -> active: os-resetState, and a rebuild of a server in ERROR
#   (Nova's); a build's late success cannot revive an errored instance,
#   its swap expects building.
# - error -> stopped/rescued, rescued -> stopped: Nova stops a server in
#   ERROR or RESCUE, and rescues one in ERROR.
# - stopped -> paused/suspended: refused, a guest that is off cannot be.
# - deleted is final.


def _parse(grid):
    table = {}
    rows = [line.split() for line in grid.strip().splitlines()]
    for row in rows:
        source, marks = row[0], row[1:]
        if source not in VM_STATES or len(marks) != len(VM_STATES):
            raise ValueError('malformed transition row %r' % row)
        for target, mark in zip(VM_STATES, marks, strict=False):
            if mark not in 'x.':
                raise ValueError('malformed mark %r in %r' % (mark, row))
            table[(source, target)] = mark == 'x'
    if len(table) != len(VM_STATES) ** 2:
        raise ValueError('the transition table is not total')
    return table


# (from, to) -> allowed. Every pair of VM_STATES appears exactly once.
TRANSITIONS = _parse(_GRID)

# What the compute REST API shows for a vm_state.
API_STATUS = {
    BUILDING: 'BUILD',
    ACTIVE: 'ACTIVE',
    STOPPED: 'SHUTOFF',
    PAUSED: 'PAUSED',
    SUSPENDED: 'SUSPENDED',
    RESCUED: 'RESCUE',
    RESIZED: 'VERIFY_RESIZE',
    SOFT_DELETED: 'SOFT_DELETED',
    SHELVED: 'SHELVED',
    SHELVED_OFFLOADED: 'SHELVED_OFFLOADED',
    ERROR: 'ERROR',
    DELETED: 'DELETED',
}

_REBOOT_TASKS = (REBOOTING, REBOOT_PENDING, REBOOT_STARTED)
_HARD_REBOOT_TASKS = (REBOOTING_HARD, REBOOT_PENDING_HARD, REBOOT_STARTED_HARD)
_REBUILD_TASKS = (REBUILDING, REBUILD_BLOCK_DEVICE_MAPPING, REBUILD_SPAWNING)

# (vm_state, task_state) -> the status a task shows instead of the state's.
_TASK_STATUS = {}
for _task in _REBOOT_TASKS:
    _TASK_STATUS[(ACTIVE, _task)] = 'REBOOT'
for _task in _HARD_REBOOT_TASKS:
    _TASK_STATUS[(ACTIVE, _task)] = 'HARD_REBOOT'
for _task in _REBUILD_TASKS:
    for _state in (ACTIVE, STOPPED, ERROR):
        _TASK_STATUS[(_state, _task)] = 'REBUILD'
_TASK_STATUS[(ACTIVE, UPDATING_PASSWORD)] = 'PASSWORD'
for _task in RESIZE_TASKS:
    for _state in (ACTIVE, STOPPED):
        _TASK_STATUS[(_state, _task)] = 'RESIZE'
_TASK_STATUS[(RESIZED, RESIZE_REVERTING)] = 'REVERT_RESIZE'
for _state in (ACTIVE, PAUSED):
    _TASK_STATUS[(_state, MIGRATING)] = 'MIGRATING'


def allowed(from_state, to_state):
    return TRANSITIONS[(from_state, to_state)]


def sources_of(to_state):
    """Every state from which ``to_state`` may be reached."""
    return tuple(
        f for (f, t), ok in TRANSITIONS.items() if ok and t == to_state
    )


def api_status(vm_state, task_state=None):
    """The ``status`` of a server in ``vm_state`` with ``task_state``
    (Nova's mapping: a reboot shows REBOOT or HARD_REBOOT, a rebuild
    REBUILD, a password change PASSWORD; other tasks show the state's)."""
    status = _TASK_STATUS.get((vm_state, task_state))
    if status is not None:
        return status
    return API_STATUS.get(vm_state, 'UNKNOWN')


@dataclasses.dataclass(frozen=True)
class Action:
    """A server action's place in the state machine.

    ``vm_states``: the states the API accepts it in (else 409);
    ``task_states``: the tasks that may be under way (None: none);
    ``task``: the task the API sets before it casts to the compute;
    ``final``: the vm_state the compute's last swap sets (None: the
    state the instance was in stays); ``power``: the power state then.
    """

    name: str
    vm_states: tuple
    task: str | None
    final: str | None
    power: int | None = None
    task_states: tuple = (None,)


_HARD_REBOOT_FROM_TASKS = (
    None,
    REBOOTING,
    REBOOT_PENDING,
    REBOOT_STARTED,
    REBOOTING_HARD,
    RESUMING,
    UNPAUSING,
    PAUSING,
    SUSPENDING,
)

ACTIONS = {
    a.name: a
    for a in (
        Action(
            'stop', (ACTIVE, RESCUED, ERROR), POWERING_OFF, STOPPED, SHUTDOWN
        ),
        Action('start', (STOPPED,), POWERING_ON, ACTIVE, RUNNING),
        Action('reboot', (ACTIVE,), REBOOTING, ACTIVE, RUNNING),
        Action(
            'reboot_hard',
            (ACTIVE, STOPPED, PAUSED, SUSPENDED, ERROR),
            REBOOTING_HARD,
            ACTIVE,
            RUNNING,
            _HARD_REBOOT_FROM_TASKS,
        ),
        Action('pause', (ACTIVE,), PAUSING, PAUSED, PAUSED_POWER),
        Action('unpause', (PAUSED,), UNPAUSING, ACTIVE, RUNNING),
        Action('suspend', (ACTIVE,), SUSPENDING, SUSPENDED, SUSPENDED_POWER),
        Action('resume', (SUSPENDED,), RESUMING, ACTIVE, RUNNING),
        Action('rescue', (ACTIVE, STOPPED, ERROR), RESCUING, RESCUED, RUNNING),
        Action('unrescue', (RESCUED,), UNRESCUING, ACTIVE, RUNNING),
        # A rebuild ends ACTIVE, or STOPPED for a stopped server (the
        # compute decides from the state it found).
        Action(
            'rebuild', (ACTIVE, STOPPED, ERROR), REBUILDING, ACTIVE, RUNNING
        ),
        Action(
            'createImage',
            (ACTIVE, STOPPED, PAUSED, SUSPENDED),
            IMAGE_SNAPSHOT,
            None,
        ),
        Action(
            'createBackup',
            (ACTIVE, STOPPED, PAUSED, SUSPENDED),
            IMAGE_BACKUP,
            None,
        ),
        Action('changePassword', (ACTIVE,), UPDATING_PASSWORD, None),
        Action(
            'soft_delete',
            (ACTIVE, STOPPED, PAUSED, SUSPENDED, RESCUED, RESIZED, ERROR),
            SOFT_DELETING,
            SOFT_DELETED,
            SHUTDOWN,
        ),
        Action('restore', (SOFT_DELETED,), RESTORING, ACTIVE, RUNNING),
        # The moves of nimbus.conductor.shelve (issue 24, section 2).
        Action(
            'shelve',
            (ACTIVE, STOPPED, PAUSED, SUSPENDED),
            SHELVING,
            SHELVED,
            SHUTDOWN,
        ),
        Action(
            'shelveOffload',
            (SHELVED,),
            SHELVING_OFFLOADING,
            SHELVED_OFFLOADED,
            SHUTDOWN,
        ),
        Action(
            'unshelve',
            (SHELVED, SHELVED_OFFLOADED),
            UNSHELVING,
            ACTIVE,
            RUNNING,
        ),
        # An evacuation ends ACTIVE, or STOPPED for a stopped server and
        # always from 2.95 (the conductor says which).
        Action(
            'evacuate', (ACTIVE, STOPPED, ERROR), REBUILDING, ACTIVE, RUNNING
        ),
        # Resize and cold migrate end VERIFY_RESIZE (the destination's
        # last swap); confirm and revert leave RESIZED for ACTIVE, or
        # STOPPED for a server that was stopped (the compute decides).
        Action('resize', (ACTIVE, STOPPED), RESIZE_PREP, RESIZED, RUNNING),
        Action('migrate', (ACTIVE, STOPPED), RESIZE_PREP, RESIZED, RUNNING),
        Action(
            'confirmResize', (RESIZED,), RESIZE_CONFIRMING, ACTIVE, RUNNING
        ),
        Action('revertResize', (RESIZED,), RESIZE_REVERTING, ACTIVE, RUNNING),
        # A live migration keeps the server's state (ACTIVE or PAUSED)
        # on whichever host it ends on (nimbus.conductor.live_migrate).
        Action('os-migrateLive', (ACTIVE, PAUSED), MIGRATING, None),
    )
}


def check_actions():
    """Every action's final state is reachable from each state it starts
    in (the unit tests call it; a table edit that breaks an action shows
    here)."""
    broken = []
    for action in ACTIONS.values():
        for source in action.vm_states:
            final = action.final or source
            if action.name in ('rebuild', 'evacuate') and source == STOPPED:
                final = STOPPED
            if not allowed(source, final):
                broken.append((action.name, source, final))
    return broken
