"""What the super conductor settles of the cross-cell moves
(:mod:`.cross_cell_resize`) on its recovery pass
(:mod:`nimbus.conductor.recovery`: every ``[conductor]
recovery_interval`` seconds, and once when it starts).

- :func:`settle_interrupted`: a super conductor killed in the middle of a
  move leaves it in a step (the source cell's migration ``pre-migrating``,
  ``migrating`` or ``post-migrating``). Once it has not changed for
  ``[conductor] build_request_timeout`` seconds (at least twice a compute
  step's timeout, three ``rpc_response_timeout``) it is settled by where the instance mapping points:

  * at the source cell (before the switch): undone as a failed move
    (:meth:`CrossCellMove.rollback`): the new guest dropped, the old one
    powered on again, the destination's ARQs deleted (those recorded in
    either cell and any other of the instance bound to the destination:
    :func:`.cross_cell_arqs.undo`), the target cell's copies deleted, the
    source's allocation back to the instance, the migration ``error`` and the
    server ACTIVE (or SHUTOFF) on its source with a fault;
  * at the target cell (after the switch): the source's part ends as the
    move would have (migration ``finished``, its copy RESIZED): the
    server stays in VERIFY_RESIZE, for a confirm or a revert.

- :func:`auto_confirm`: the moves whose target's migration has waited in
  ``finished`` longer than ``[DEFAULT] resize_confirm_window`` are taken
  for their confirm (as the API's ``confirmResize``) and confirmed
  (:func:`.cross_cell_end.confirm`). A cell's destination cannot reach the
  super conductor, so its own auto-confirm leaves them out
  (:func:`.cell_moves.take_unconfirmed`).

- :func:`settle_ends`: a super conductor killed in a confirm or a revert
  leaves the migration ``confirming`` (the target cell's record) or
  ``reverting`` (the target's, or the source's once the target's copy
  is gone). Once it has not changed for as long as above, the confirm or
  revert is run again from its first step
  (:func:`.cross_cell_end.resume`): each step skips or repeats what the
  dead one did, so the server ends as an uninterrupted confirm or revert
  leaves it. A first compute step refused on the way leaves the move
  for the next pass.
"""

import types

from oslo_log import log as logging
from oslo_utils import uuidutils

from nimbus.common import instance_states as states
from nimbus.conductor import cell_moves
from nimbus.conductor import cross_cell_end
from nimbus.conductor import cross_cell_resize as moves
from nimbus.db import cell_migrations
from nimbus.db import instance_actions
from nimbus.db import instance_mappings

LOG = logging.getLogger(__name__)

UNDER_WAY = ('pre-migrating', 'migrating', 'post-migrating')
# The parts of a move a status says may have been done (what a rollback
# undoes; each undo is idempotent).
_DONE = {
    'pre-migrating': {'copied'},
    'migrating': {'copied', 'powered_off'},
    'post-migrating': {'copied', 'powered_off', 'spawned'},
}


class Interrupted(Exception):
    """The move's super conductor stopped in its middle."""


def _cells(conductor):
    return [c for c in conductor.cells.cells() if not c.is_cell0]


def _request_id(db, uuid, action):
    """The request of the instance's newest ``action`` (the move's)."""
    with db.session() as session:
        for found in instance_actions.list_for(session, uuid):
            if found['action'] in action:
                return found['request_id']
    return 'req-' + uuidutils.generate_uuid()


def _at_least(conductor, older_than):
    """Never less than twice the longest compute step (a live super
    conductor updates a migration between two such steps)."""
    step = (
        max(int(getattr(conductor.conf, 'rpc_response_timeout', 60)), 60) * 3
    )
    return max(older_than, 2 * step)


def settle_interrupted(conductor, ctxt, older_than):
    """Settle the cross-cell moves whose source's migration has stayed in
    a step for ``older_than`` seconds (at least twice the longest
    compute step's timeout); ``{'undone': n, 'switched': n}``."""
    done = {'undone': 0, 'switched': 0}
    older_than = _at_least(conductor, older_than)
    for source in _cells(conductor):
        with conductor.cells.db(source).session() as session:
            stuck = [
                m
                for m in cell_migrations.with_status(
                    session, UNDER_WAY, older_than=older_than
                )
                if m['cross_cell_move']
                and (m['details'] or {}).get('source_cell_uuid') == source.uuid
            ]
        for migration in stuck:
            try:
                kind = _settle(conductor, ctxt, source, migration)
            except Exception:
                LOG.exception(
                    'recovery: settling the cross-cell move %s failed',
                    migration['uuid'],
                )
                continue
            if kind:
                done[kind] += 1
    return done


def _settle(conductor, ctxt, source, migration):
    uuid = migration['instance_uuid']
    target = conductor.cells.by_uuid(migration['details']['target_cell_uuid'])
    with conductor.api_db.session() as session:
        mapping = instance_mappings.get(session, uuid)
    request_id = _request_id(
        conductor.cells.db(source), uuid, ('resize', 'migrate')
    )
    move = moves.CrossCellMove(
        conductor, ctxt, source, target, uuid, request_id
    )
    if mapping is not None and mapping.cell_id == target.id:
        # After the switch: the source's part ends as the move's would.
        move.step(
            source,
            migration['uuid'],
            ['post-migrating'],
            'finished',
            [states.ACTIVE, states.STOPPED],
            [states.RESIZE_MIGRATED],
            {'vm_state': states.RESIZED, 'task_state': None},
        )
        LOG.warning(
            'recovery: the cross-cell move %s of %s had switched to cell '
            '%s: left in VERIFY_RESIZE',
            migration['uuid'],
            uuid,
            target.name,
        )
        return 'switched'
    move.done = set(_DONE[migration['status']])
    selected = types.SimpleNamespace(service_host=migration['dest_compute'])
    move.rollback(
        migration,
        selected,
        Interrupted(
            'the super conductor stopped in the middle of the move '
            '(migration %s)' % migration['status']
        ),
    )
    LOG.warning(
        'recovery: the cross-cell move %s of %s was interrupted before '
        'its switch: undone',
        migration['uuid'],
        uuid,
    )
    return 'undone'


ENDING = {'confirming': 'confirmed', 'reverting': 'reverted'}


def settle_ends(conductor, ctxt, older_than):
    """Finish the confirms and reverts of cross-cell moves whose
    migration has stayed ``confirming`` or ``reverting`` for
    ``older_than`` seconds (at least twice the longest compute step's
    timeout); ``{'confirmed': n, 'reverted': n}``."""
    done = dict.fromkeys(ENDING.values(), 0)
    older_than = _at_least(conductor, older_than)
    seen = set()
    for cell in _cells(conductor):
        with conductor.cells.db(cell).session() as session:
            stuck = [
                m
                for m in cell_migrations.with_status(
                    session, sorted(ENDING), older_than=older_than
                )
                if m['cross_cell_move'] and _ends_here(m, cell)
            ]
        for migration in stuck:
            if migration['uuid'] in seen:
                continue  # a revert's record in both cells
            seen.add(migration['uuid'])
            request_id = _request_id(
                conductor.cells.db(cell),
                migration['instance_uuid'],
                ('confirmResize', 'revertResize'),
            )
            LOG.warning(
                'recovery: the %s of the cross-cell move %s of %s was '
                'interrupted: running it again',
                migration['status'],
                migration['uuid'],
                migration['instance_uuid'],
            )
            try:
                ended = cross_cell_end.resume(
                    conductor, ctxt, migration, request_id
                )
            except Exception:
                LOG.exception(
                    'recovery: the %s of the cross-cell move %s failed',
                    migration['status'],
                    migration['uuid'],
                )
                continue
            if ended:
                done[ENDING[migration['status']]] += 1
    return done


def _ends_here(migration, cell):
    """A confirm is the target cell's record; a revert is the target's
    until the target's copy is deleted, then the source's."""
    details = migration['details'] or {}
    cells = [details.get('target_cell_uuid')]
    if migration['status'] == 'reverting':
        cells.append(details.get('source_cell_uuid'))
    return cell.uuid in cells


def auto_confirm(conductor, ctxt, window):
    """Confirm the cross-cell moves waiting in VERIFY_RESIZE for longer
    than ``window`` seconds (``[DEFAULT] resize_confirm_window``; 0: never);
    the number confirmed."""
    if not window or window <= 0:
        return 0
    count = 0
    for cell in _cells(conductor):
        taken = cell_moves.take_unconfirmed(
            conductor.cells.db(cell),
            None,
            window,
            lambda _m: 'req-' + uuidutils.generate_uuid(),
            cross_cell=True,
        )
        for migration in taken:
            LOG.info(
                'Confirming the cross-cell move of %s (waited over %d s)',
                migration.instance_uuid,
                window,
            )
            try:
                cross_cell_end.confirm(
                    conductor,
                    ctxt,
                    migration.instance_uuid,
                    cell.uuid,
                    migration.details['request_id'],
                    migration.uuid,
                )
            except Exception:
                LOG.exception(
                    'recovery: the auto-confirm of %s failed',
                    migration.instance_uuid,
                )
                continue
            count += 1
    return count
