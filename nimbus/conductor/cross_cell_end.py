"""The end of a resize or cold migrate that carried the server to another
cell (:mod:`.cross_cell_resize`): its confirm and its revert, driven by
the super conductor (conductor RPC 1.11, cast by the compute API, which
took the task and the migration's status in the target cell).

- :class:`Confirm`: the source drops the old guest
  (``confirm_snapshot_based_resize_at_source``); the source cell's hidden
  copy of the instance (faults, actions) is deleted, its migration kept
  hidden and ``confirmed``; the migration's allocation (the source's) is
  dropped, the source's ARQs deleted (:mod:`.cross_cell_arqs`); the
  server ACTIVE (or SHUTOFF) in the target cell.
- :class:`Revert`: the destination drops the new guest
  (``revert_snapshot_based_resize_at_dest``) and its ARQs are deleted;
  the source cell's copy
  shows again (with the actions the target cell recorded), the instance
  mapping points back at it, the target cell's copy and migration are
  deleted; the source powers the guest on
  (``finish_revert_snapshot_based_resize_at_source``; a stopped server
  stays off); the source's allocation goes back to the instance,
  replacing the destination's; migration ``reverted``.

A compute that refuses the first step leaves the server as it was
(VERIFY_RESIZE, migration ``finished``) with a fault, so the user may
try again.

Each is a list of steps (``STEPS``), run in order, each of which
tolerates having run already (a copy already deleted, a guest already
gone, the allocation already dropped or given back, the mapping already
switched back); the last one moves the migration to its final status.
A server deleted meanwhile is not shown again (:class:`Deleted`). A super conductor that dies among them leaves the
migration ``confirming`` or ``reverting``; its recovery pass
(:mod:`.cross_cell_recovery`) runs them all again (:func:`resume`).
"""

import traceback

from oslo_log import log as logging

from nimbus.common import instance_states as states
from nimbus.conductor import cross_cell_arqs
from nimbus.conductor import cross_cell_resize as moves
from nimbus.db import cell_instances as instances
from nimbus.db import cell_migrations
from nimbus.db import instance_actions

LOG = logging.getLogger(__name__)


def _load(conductor, cell_uuid, migration_uuid, status):
    """``(target cell, source cell, migration)`` or None when the move is
    not waiting for this end."""
    target = conductor.cells.by_uuid(cell_uuid)
    with conductor.cells.db(target).session() as session:
        migration = cell_migrations.get(session, migration_uuid)
    if (
        migration is None
        or not migration['cross_cell_move']
        or migration['status'] != status
    ):
        LOG.info(
            'Migration %s is not a cross-cell move in %s: left as it is',
            migration_uuid,
            status,
        )
        return None
    source = conductor.cells.by_uuid(migration['details']['source_cell_uuid'])
    return target, source, migration


def _give_back(steps, cell, migration, status, task, exc):
    """The first step was refused: VERIFY_RESIZE again (migration
    ``finished``), a fault, the action in error."""
    with steps.db(cell).session() as session:
        cell_migrations.set_status(
            session, migration['uuid'], 'finished', expected=[status]
        )
        instances.transition(
            session,
            steps.uuid,
            [states.RESIZED],
            {
                'task_state': None,
                'fault': {
                    'message': str(exc)[:255],
                    'details': ''.join(traceback.format_exception(exc)),
                    'code': 500,
                },
            },
            expected_task_states=[task],
        )
        instance_actions.finish(
            session, steps.uuid, steps.request_id, instance_actions.ERROR
        )


_STOPPED = object()


class End(moves.Steps):
    """One confirm or revert of the move of ``migration`` (a dict of its
    record in either cell) from ``source`` to ``target`` (Cells).
    ``resume``: run again for a super conductor that died in it; a
    refused first compute step then leaves the move as it is, for the
    next recovery pass (the dead one may have done part of it already)."""

    STATUS = None
    TASK = None
    STEPS = ()

    def __init__(
        self,
        conductor,
        ctxt,
        instance_uuid,
        request_id,
        source,
        target,
        migration,
        resume=False,
    ):
        super().__init__(conductor, ctxt, instance_uuid, request_id)
        self.source = source
        self.target = target
        self.migration = migration
        self.resume = resume

    @property
    def mig(self):
        return self.migration['uuid']

    def run(self):
        """True when the end is done; False when its first compute step
        was refused."""
        for name in self.STEPS:
            if getattr(self, name)() is _STOPPED:
                return False
        return True

    def hidden_in(self, cell):
        """Whether the instance's copy in ``cell`` is hidden; None when
        the cell has none."""
        with self.db(cell).session() as session:
            row = instances.get(session, self.uuid)
            if row is None or row.deleted:
                return None
            return bool(row.hidden)

    def deleted_in(self, cell):
        """Whether ``cell`` holds a deleted copy (a user's delete)."""
        with self.db(cell).session() as session:
            row = instances.get(session, self.uuid)
            return row is not None and bool(row.deleted)

    def first(self, cell, host, name, call):
        """The compute step that starts the end (its event in ``cell``);
        _STOPPED when it was refused."""
        try:
            self.compute(cell, host, name, call, self.migration)
        except moves.MoveFailed as exc:
            if self.resume:
                LOG.warning(
                    'recovery: %s of %s: %s; left %s for the next pass',
                    name,
                    self.uuid,
                    exc,
                    self.STATUS,
                )
            else:
                _give_back(
                    self,
                    self.target,
                    self.migration,
                    self.STATUS,
                    self.TASK,
                    exc,
                )
            return _STOPPED
        return None


class Confirm(End):
    STATUS = 'confirming'
    TASK = states.RESIZE_CONFIRMING
    STEPS = (
        'drop_old_guest',
        'drop_source_arqs',
        'drop_source_copy',
        'confirm_source_migration',
        'drop_source_allocation',
        'finish_action',
        'show_confirmed',
    )

    def drop_old_guest(self):
        if self.hidden_in(self.source) is None:
            return None  # its copy deleted: the guest went before it
        return self.first(
            self.target,
            self.migration['source_compute'],
            moves.CONFIRM_SOURCE,
            self.conductor.compute_api(
                self.source
            ).confirm_snapshot_based_resize_at_source,
        )

    def drop_source_arqs(self):
        cross_cell_arqs.confirm(self.conductor, self.ctxt, self.migration)

    def drop_source_copy(self):
        self.drop_copy(self.source)

    def confirm_source_migration(self):
        with self.db(self.source).session() as session:
            cell_migrations.set_status(session, self.mig, 'confirmed')

    def drop_source_allocation(self):
        self.claims.confirm(self.ctxt, self.mig)

    def show_confirmed(self):
        # Deliberately like compute.resize_end's confirm: the same
        # transition, recorded here by the super conductor in the target
        # cell (a cross-cell confirm is run by it, not by one compute).
        stopped = moves.was_stopped(self.migration)
        self.step(
            self.target,
            self.mig,
            ['confirming'],
            'confirmed',
            [states.RESIZED],
            [states.RESIZE_CONFIRMING],
            {
                'vm_state': states.STOPPED if stopped else states.ACTIVE,
                'task_state': None,
            },
        )

    def finish_action(self):
        with self.db(self.target).session() as session:
            instance_actions.finish(session, self.uuid, self.request_id)


class Revert(End):
    STATUS = 'reverting'
    TASK = states.RESIZE_REVERTING
    STEPS = (
        'drop_new_guest',
        'drop_dest_arqs',
        'carry_actions_back',
        'hide_target_copy',
        'show_source_copy',
        'map_back',
        'drop_target_copy',
        'restart_old_guest',
        'give_allocation_back',
        'finish_action',
        'show_reverted',
    )
    failed = None  # the source's refusal to power the guest on

    def drop_new_guest(self):
        if self.hidden_in(self.target) in (None, True):
            return None  # hidden or deleted: the guest went before
        return self.first(
            self.target,
            self.migration['dest_compute'],
            moves.REVERT_DEST,
            self.conductor.compute_api(
                self.target
            ).revert_snapshot_based_resize_at_dest,
        )

    def drop_dest_arqs(self):
        cross_cell_arqs.revert(self.conductor, self.ctxt, self.migration)

    def carry_actions_back(self):
        if self.hidden_in(self.target) is not None:
            self.carry_actions(self.target, self.source)

    def hide_target_copy(self):
        # The source cell owns the server again: the target's copy hidden
        # first, so that no list shows the server twice.
        with self.db(self.target).session() as session:
            instances.transition(
                session,
                self.uuid,
                [states.RESIZED],
                {'hidden': True},
                expected_task_states=[states.RESIZE_REVERTING],
            )

    def show_source_copy(self):
        self.step(
            self.source,
            self.mig,
            ['finished', 'reverting'],
            'reverting',
            [states.RESIZED],
            [None, states.RESIZE_REVERTING],
            {'task_state': states.RESIZE_REVERTING, 'hidden': False},
            {'hidden': False},
        )

    def map_back(self):
        self.map_to(self.source)

    def drop_target_copy(self):
        self.drop_copy(self.target, self.mig)

    def restart_old_guest(self):
        try:
            self.compute(
                self.source,
                self.migration['source_compute'],
                moves.FINISH_REVERT_SOURCE,
                self.conductor.compute_api(
                    self.source
                ).finish_revert_snapshot_based_resize_at_source,
                self.migration,
            )
        except moves.MoveFailed as exc:
            # As Nova: the guest could not come back; the server shows
            # ERROR on its source (its allocation is back all the same).
            self.failed = exc

    def give_allocation_back(self):
        self.claims.undo(self.ctxt, self.uuid, self.mig)

    def show_reverted(self):
        if self.failed is not None:
            status = 'error'
            end = {
                'vm_state': states.ERROR,
                'task_state': None,
                'fault': {'message': str(self.failed)[:255], 'code': 500},
            }
        else:
            stopped = moves.was_stopped(self.migration)
            status = 'reverted'
            end = {
                'vm_state': states.STOPPED if stopped else states.ACTIVE,
                'task_state': None,
                'power_state': states.SHUTDOWN if stopped else states.RUNNING,
            }
        self.step(
            self.source,
            self.mig,
            ['reverting'],
            status,
            [states.RESIZED],
            [states.RESIZE_REVERTING],
            end,
        )

    def finish_action(self):
        with self.db(self.source).session() as session:
            instance_actions.finish(
                session,
                self.uuid,
                self.request_id,
                None if self.failed is None else instance_actions.ERROR,
            )


class Deleted(End):
    """A confirm or revert resumed after the server was deleted (a delete
    in VERIFY_RESIZE whose confirm died, or a delete while a revert was
    stuck): nothing shows again. What the move left is dropped: the
    guest of each cell that still holds a live copy, those copies, the
    migration's allocation; both cells' records end ``final``
    (``confirmed`` for a confirm, ``error`` for a revert)."""

    STEPS = (
        'drop_guests',
        'drop_move_arqs',
        'drop_live_copies',
        'drop_source_allocation',
        'finish_action',
        'end_records',
    )

    def __init__(self, *args, final='confirmed', **kwargs):
        super().__init__(*args, **kwargs)
        self.final = final

    def drop_guests(self):
        apis = self.conductor.compute_api
        for cell, host, name, call in (
            (
                self.source,
                self.migration['source_compute'],
                moves.CONFIRM_SOURCE,
                apis(self.source).confirm_snapshot_based_resize_at_source,
            ),
            (
                self.target,
                self.migration['dest_compute'],
                moves.REVERT_DEST,
                apis(self.target).revert_snapshot_based_resize_at_dest,
            ),
        ):
            if self.hidden_in(cell) is not None:
                if self.first(cell, host, name, call) is _STOPPED:
                    return _STOPPED
        return None

    def drop_move_arqs(self):
        cross_cell_arqs.forget(self.conductor, self.ctxt, self.migration)

    def drop_live_copies(self):
        for cell in (self.source, self.target):
            if self.hidden_in(cell) is not None:
                self.drop_copy(cell)

    def drop_source_allocation(self):
        self.claims.confirm(self.ctxt, self.mig)

    def finish_action(self):
        message = instance_actions.ERROR if self.final == 'error' else None
        for cell in (self.source, self.target):
            with self.db(cell).session() as session:
                instance_actions.finish(
                    session, self.uuid, self.request_id, message
                )

    def end_records(self):
        for cell in (self.source, self.target):
            with self.db(cell).session() as session:
                cell_migrations.set_status(
                    session,
                    self.mig,
                    self.final,
                    expected=['finished', 'confirming', 'reverting'],
                )


def confirm(
    conductor, ctxt, instance_uuid, cell_uuid, request_id, migration_uuid
):
    loaded = _load(conductor, cell_uuid, migration_uuid, 'confirming')
    if loaded is None:
        return
    target, source, migration = loaded
    Confirm(
        conductor, ctxt, instance_uuid, request_id, source, target, migration
    ).run()


# Deliberately like confirm: the work of another RPC method; a shared
# helper would take more lines than the two differences it passes on.
def revert(
    conductor, ctxt, instance_uuid, cell_uuid, request_id, migration_uuid
):
    loaded = _load(conductor, cell_uuid, migration_uuid, 'reverting')
    if loaded is None:
        return
    target, source, migration = loaded
    Revert(
        conductor, ctxt, instance_uuid, request_id, source, target, migration
    ).run()


def resume(conductor, ctxt, migration, request_id):
    """Run again the confirm or revert a dead super conductor left
    ``migration`` in (a dict of its record in either cell, ``confirming``
    or ``reverting``), for ``request_id`` (the action's); True when it
    ended, False when its first compute step was refused (left for the
    next pass)."""
    details = migration['details']
    kind = Confirm if migration['status'] == 'confirming' else Revert
    args = (
        conductor,
        ctxt,
        migration['instance_uuid'],
        request_id,
        conductor.cells.by_uuid(details['source_cell_uuid']),
        conductor.cells.by_uuid(details['target_cell_uuid']),
        migration,
    )
    end = kind(*args, resume=True)
    if end.deleted_in(end.source) or end.deleted_in(end.target):
        LOG.warning(
            'recovery: %s was deleted during its %s: dropping what the '
            'move left',
            end.uuid,
            migration['status'],
        )
        end = Deleted(
            *args,
            resume=True,
            final='confirmed' if kind is Confirm else 'error',
        )
    return end.run()
