"""The states of an accelerator request (ARQ) and the one table of the
changes allowed between them.

::

    Initial ──bind──► BindStarted ──► Bound ──unbind──► Unbound ──bind──► ...
                          │                  └──► UnbindFailed ──► Unbound
                          └──► BindFailed ──bind again / unbind──►

Every state may go to Deleting (the row is removed right after); Deleting
goes nowhere. A state never "changes" to itself. :func:`allowed` answers
for every ordered pair, and every change is written as a compare-and-swap
``UPDATE ... WHERE state = <expected>`` (see
:func:`nimbus.accelerator.objects.arq.transition`).
"""

INITIAL = 'Initial'
BIND_STARTED = 'BindStarted'
BOUND = 'Bound'
BIND_FAILED = 'BindFailed'
UNBOUND = 'Unbound'
UNBIND_FAILED = 'UnbindFailed'
DELETING = 'Deleting'

ALL = (
    INITIAL,
    BIND_STARTED,
    BOUND,
    BIND_FAILED,
    UNBOUND,
    UNBIND_FAILED,
    DELETING,
)

# from-state -> the states it may change to. Anything not listed is refused.
TRANSITIONS = {
    INITIAL: frozenset({BIND_STARTED, DELETING}),
    BIND_STARTED: frozenset({BOUND, BIND_FAILED, UNBOUND, DELETING}),
    BOUND: frozenset({UNBOUND, UNBIND_FAILED, DELETING}),
    BIND_FAILED: frozenset({BIND_STARTED, UNBOUND, DELETING}),
    UNBOUND: frozenset({BIND_STARTED, DELETING}),
    UNBIND_FAILED: frozenset({UNBOUND, DELETING}),
    DELETING: frozenset(),
}

# States a bind request may start from.
BINDABLE = frozenset(s for s in ALL if BIND_STARTED in TRANSITIONS[s])
# States in which the ARQ's binding is settled (bind_state=resolved).
RESOLVED = frozenset({BOUND, BIND_FAILED})
# States whose binding is still in progress.
IN_PROGRESS = frozenset({BIND_STARTED})


class InvalidTransition(ValueError):
    """A change the table refuses."""

    def __init__(self, current, new):
        super().__init__(
            'an accelerator request in state %s cannot move '
            'to %s' % (current, new)
        )
        self.current = current
        self.new = new


def allowed(current, new):
    """Whether ``current`` may change to ``new``. Unknown states raise
    ValueError: the table is total over :data:`ALL`."""
    if current not in TRANSITIONS:
        raise ValueError('unknown ARQ state %r' % (current,))
    if new not in TRANSITIONS:
        raise ValueError('unknown ARQ state %r' % (new,))
    return new in TRANSITIONS[current]


def check(current, new):
    """Raise :class:`InvalidTransition` unless ``current`` -> ``new`` is
    allowed."""
    if not allowed(current, new):
        raise InvalidTransition(current, new)
