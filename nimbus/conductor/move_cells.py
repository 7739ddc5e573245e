"""Which cells a resize or cold migrate may choose a destination in.

As Nova, a move stays in the server's cell unless the policy
``compute:servers:resize:cross_cell`` (default ``!``: nobody) allowed it
when the compute API took the move (conductor RPC 1.9 carries the
answer). Either way the request spec carries the source cell
(``extra['source_cell_uuid']``), so the scheduler's CrossCellWeigher
(``[filter_scheduler] cross_cell_move_weight_multiplier``) prefers hosts
of the server's own cell when hosts of several cells fit. Without the
policy, ``requested_destination`` names the source cell and the
scheduler drops every host of another cell before its filters run
(:mod:`nimbus.scheduler.host_prefilter`).

A destination in another cell (the policy allowed it and only another
cell's host fits, or the weigher's multiplier is negative) is not moved
there yet: carrying the instance record to the target cell's database is
not built, so such a move is undone with a fault saying so (see
docs/moves-resize.md, "Not done").
"""


def scope(spec, source_cell_uuid, cross_cell):
    """Set the cells the move's ``spec`` may choose from (in place); the
    spec."""
    spec.extra = dict(spec.extra or {})
    spec.extra['source_cell_uuid'] = source_cell_uuid
    if not cross_cell:
        destination = dict(spec.extra.get('requested_destination') or {})
        destination['cell'] = source_cell_uuid
        spec.extra['requested_destination'] = destination
    return spec


def in_other_cell(selection, cell_uuid):
    """Whether the scheduler's ``selection`` is a host of another cell
    than ``cell_uuid`` (a selection without a cell is taken as in it)."""
    return selection.cell_uuid not in (None, cell_uuid)
