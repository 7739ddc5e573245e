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
cell's host fits, or the weigher's multiplier is negative) makes the
move a cross-cell one, carried out by the super conductor
(:mod:`nimbus.conductor.cross_cell_resize`) once :func:`check_movable`
let it: computes that read compute RPC 1.7 and, for a server with
accelerators, 1.8 and an accelerator service
(:mod:`nimbus.conductor.cross_cell_arqs`).
"""

from nimbus.common import exception
from nimbus.conductor import cross_cell_arqs


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


def check_movable(conductor, cell, instance, spec):
    """Raise NoValidHost when the server cannot be carried out of ``cell``
    (the source): a ``[upgrade_levels] compute`` cap below 1.7, or, for a
    server with accelerators (ARQs, or a device profile in the move's
    flavor), below 1.8 or without an accelerator service."""
    if not conductor.compute_api(cell).takes_cross_cell_moves():
        raise exception.NoValidHost(
            reason='the scheduler chose a host of another cell and the '
            'computes are capped below compute RPC 1.7 (cross-cell moves)'
        )
    cross_cell_arqs.check(conductor, cell, instance, spec)
