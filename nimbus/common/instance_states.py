"""The instance state machine: one total transition table.

``vm_state`` is the durable state. Every change is a compare-and-swap in
SQL (:func:`nimbus.db.cell_instances.transition`): the UPDATE names the
states it expects, so two services racing on one instance cannot both win.
``task_state`` says what is under way within a state.
"""

BUILDING = 'building'
ACTIVE = 'active'
ERROR = 'error'
DELETED = 'deleted'

VM_STATES = (BUILDING, ACTIVE, ERROR, DELETED)

# task states
SCHEDULING = 'scheduling'
SPAWNING = 'spawning'
RESCHEDULING = 'rescheduling'
DELETING = 'deleting'

TASK_STATES = (None, SCHEDULING, SPAWNING, RESCHEDULING, DELETING)

# (from, to) -> allowed. Every pair of VM_STATES appears exactly once.
TRANSITIONS = {
    (BUILDING, BUILDING): True,  # a reschedule or a new task within build
    (BUILDING, ACTIVE): True,
    (BUILDING, ERROR): True,
    (BUILDING, DELETED): True,
    (ACTIVE, BUILDING): False,
    (ACTIVE, ACTIVE): True,  # task changes (deleting) keep the state
    (ACTIVE, ERROR): True,
    (ACTIVE, DELETED): True,
    (ERROR, BUILDING): False,
    (ERROR, ACTIVE): False,
    (ERROR, ERROR): True,
    (ERROR, DELETED): True,
    (DELETED, BUILDING): False,
    (DELETED, ACTIVE): False,
    (DELETED, ERROR): False,
    (DELETED, DELETED): True,
}

# What the compute REST API shows.
API_STATUS = {
    BUILDING: 'BUILD',
    ACTIVE: 'ACTIVE',
    ERROR: 'ERROR',
    DELETED: 'DELETED',
}


def allowed(from_state, to_state):
    return TRANSITIONS[(from_state, to_state)]


def sources_of(to_state):
    """Every state from which ``to_state`` may be reached."""
    return tuple(
        f for (f, t), ok in TRANSITIONS.items() if ok and t == to_state
    )


def api_status(vm_state, task_state=None):
    if task_state == DELETING and vm_state != DELETED:
        return 'ACTIVE' if vm_state == ACTIVE else API_STATUS[vm_state]
    return API_STATUS.get(vm_state, 'UNKNOWN')
