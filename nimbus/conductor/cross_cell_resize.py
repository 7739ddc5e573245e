"""A resize or cold migrate that carries the server to another cell
(Nova's cross-cell resize, since Ussuri), driven by the super conductor:
it alone reaches both cells' databases and both cells' buses.

The compute API let the move leave its cell
(``compute:servers:resize:cross_cell``) and the scheduler chose a host
of another cell (:mod:`.move_cells`); the migration is made in the
source cell and :class:`~.move_claims.MoveClaims` holds placement as for
a move in one cell (the source's allocation on the migration's consumer,
the destination claimed for the instance). Then, :meth:`CrossCellMove.run`:

1. the source's migration is marked ``cross_cell_move`` with its
   destination; the instance (flavor, metadata, ARQ references, faults),
   its actions and events and the migration are copied into the target
   cell, the instance and the migration there ``hidden``;
2. the destination checks it can take the guest and binds the ARQs of
   a device profile (``prep_snapshot_based_resize_at_dest``;
   :mod:`.cross_cell_arqs`), the source powers it off
   (``prep_snapshot_based_resize_at_source``; migration ``migrating``,
   then ``post-migrating``), the destination spawns it with the new
   flavor (``finish_snapshot_based_resize_at_dest``);
3. the switch: the source's copy becomes hidden (RESIZED, migration
   ``finished`` and hidden), the instance mapping points at the target
   cell, the target's copy shows (VERIFY_RESIZE on the destination, the
   new flavor; its migration ``finished``). The API lists the server
   once, from the target cell; ``os-migrations`` shows the target's
   record.

:func:`confirm`: the source drops the old guest, the source cell's
hidden copy is deleted (its migration kept, hidden, ``confirmed``), the
migration's allocation dropped. :func:`revert`: the destination drops
the new guest, the mapping goes back, the source's copy shows again with
the actions the target recorded, the target's copy is deleted, the
source powers the guest on and gets its allocation back.

A failure anywhere before the switch ends (a compute's refusal, a swap
lost to a delete or a reset) puts everything back: the guests as they
were, the mapping on the source cell, no copy in the target, the
source's allocation back to the instance, the destination's ARQs
deleted, the migration ``error`` and
the server ACTIVE (or SHUTOFF) in its cell with a fault saying why.
"""

import traceback

from oslo_log import log as logging

from nimbus.common import instance_states as states
from nimbus.common.objects import migration as migration_obj
from nimbus.conductor import cell_moves
from nimbus.conductor import cross_cell_arqs
from nimbus.conductor import move_claims
from nimbus.db import cell_instances as instances
from nimbus.db import cell_migrations
from nimbus.db import instance_actions
from nimbus.db import instance_mappings
from nimbus.db.cell_instances import copies

LOG = logging.getLogger(__name__)

_MOVING = (states.ACTIVE, states.STOPPED)
EVENT = 'conductor_migrate_server'
PREP_DEST = 'compute_prep_snapshot_based_resize_at_dest'
PREP_SOURCE = 'compute_prep_snapshot_based_resize_at_source'
FINISH_DEST = 'compute_finish_snapshot_based_resize_at_dest'
CONFIRM_SOURCE = 'compute_confirm_snapshot_based_resize_at_source'
REVERT_DEST = 'compute_revert_snapshot_based_resize_at_dest'
FINISH_REVERT_SOURCE = 'compute_finish_revert_snapshot_based_resize_at_source'


class MoveFailed(Exception):
    """A step of the move did not hold: a compute refused or could not be
    reached, or a swap was lost to a delete or a reset."""


def was_stopped(migration):
    return (migration['details'] or {}).get('vm_state') == states.STOPPED


class Steps:
    """What both directions share: the cells, the computes, the events."""

    def __init__(self, conductor, ctxt, instance_uuid, request_id):
        self.conductor = conductor
        self.ctxt = ctxt
        self.uuid = instance_uuid
        self.request_id = request_id
        self.claims = move_claims.MoveClaims(
            conductor.scheduler, conductor.placement
        )

    def db(self, cell):
        return self.conductor.cells.db(cell)

    @property
    def _timeout(self):
        conf = self.conductor.conf
        return max(int(getattr(conf, 'rpc_response_timeout', 60)), 60) * 3

    def event(self, cell, name, host, result=None, exc=None):
        with self.db(cell).session() as session:
            if result is None:
                instance_actions.event_start(
                    session, self.uuid, self.request_id, name, host
                )
                return
            instance_actions.event_finish(
                session,
                self.uuid,
                self.request_id,
                name,
                host,
                result,
                ''.join(traceback.format_exception(exc)) if exc else None,
                str(exc)[:255] if exc else None,
            )

    def compute(self, cell, host, name, call, migration, **more):
        """One compute step inside its event (recorded in ``cell``); the
        answer. Raises MoveFailed when the compute refused or could not
        be reached."""
        self.event(cell, name, host)
        try:
            answer = call(
                self.ctxt,
                host,
                self.request_id,
                migration_obj.Migration.from_row(migration),
                timeout=self._timeout,
                **more,
            )
            if not (answer or {}).get('ok'):
                raise MoveFailed(
                    '%s on %s: %s'
                    % (name, host, (answer or {}).get('error') or 'refused')
                )
        except Exception as exc:
            failed = (
                exc
                if isinstance(exc, MoveFailed)
                else MoveFailed('%s on %s: %s' % (name, host, exc))
            )
            self.event(cell, name, host, 'Error', failed)
            raise failed from exc
        self.event(cell, name, host, 'Success')
        return answer

    def step(self, cell, migration_uuid, *args, **kwargs):
        done = cell_moves.move_step(
            self.db(cell), self.uuid, migration_uuid, *args, **kwargs
        )
        if done is None:
            raise MoveFailed(
                'instance %s or migration %s changed meanwhile (deleted or '
                'reset)' % (self.uuid, migration_uuid)
            )
        return done

    def map_to(self, cell):
        with self.conductor.api_db.session() as session:
            instance_mappings.set_cell(session, self.uuid, cell.id)

    def carry_actions(self, source, target):
        """The target cell's actions and events of the instance become
        the source cell's (the cell that owns the server from now on)."""
        with (
            self.db(source).session() as src,
            self.db(target).session() as dst,
        ):
            instance_actions.purge(dst, self.uuid)
            instance_actions.copy_missing(src, dst, self.uuid)

    def drop_copy(self, cell, migration_uuid=None):
        """Delete the instance (faults, actions) and, given, the migration
        from ``cell``."""
        with self.db(cell).session() as session:
            copies.purge(session, self.uuid)
            instance_actions.purge(session, self.uuid)
            if migration_uuid is not None:
                cell_migrations.purge(session, migration_uuid)


class CrossCellMove(Steps):
    """One move of ``instance_uuid`` from ``source`` to ``target`` (Cells)."""

    def __init__(
        self, conductor, ctxt, source, target, instance_uuid, request_id
    ):
        super().__init__(conductor, ctxt, instance_uuid, request_id)
        self.source = source
        self.target = target
        self.done = set()

    def run(self, migration, selected):
        """Carry the server to ``selected`` (a Selection of the target
        cell); True when it shows VERIFY_RESIZE there, False when the move
        was rolled back."""
        try:
            self._run(migration, selected)
        except Exception as exc:  # noqa: BLE001 - any failure rolls the move back
            LOG.warning(
                'The move of %s to cell %s failed: %s',
                self.uuid,
                self.target.name,
                exc,
            )
            self.rollback(migration, selected, exc)
            return False
        return True

    def _run(self, migration, selected):
        src, dst = self.source, self.target
        dest = selected.service_host
        mig = migration['uuid']
        with self.db(src).session() as session:
            cell_migrations.update(
                session,
                mig,
                cross_cell_move=True,
                dest_compute=dest,
                dest_host=dest,
                dest_node=selected.nodename,
                details=dict(
                    migration['details'] or {},
                    dest_node_uuid=selected.compute_node_uuid,
                    source_cell_uuid=src.uuid,
                    target_cell_uuid=dst.uuid,
                    **cross_cell_arqs.prep_details(migration, selected),
                ),
            )
            instance_actions.event_finish(
                session, self.uuid, self.request_id, EVENT, None, 'Success'
            )
            migration.update(cell_migrations.get(session, mig))
        # The target cell's copies, hidden until the switch.
        self.done.add('copied')
        with self.db(src).session() as s, self.db(dst).session() as t:
            if copies.copy_instance(s, t, self.uuid, hidden=True) is None:
                raise MoveFailed('instance %s is gone' % self.uuid)
            instance_actions.purge(t, self.uuid)
            instance_actions.copy_missing(s, t, self.uuid)
            cell_migrations.copy(s, t, migration['uuid'], hidden=True)
        apis = self.conductor.compute_api
        self.compute(
            src,
            dest,
            PREP_DEST,
            apis(dst).prep_snapshot_based_resize_at_dest,
            migration,
        )
        # The ARQs the destination bound and awaited (a device profile).
        cross_cell_arqs.take_recorded(self, migration)
        self.step(
            src,
            mig,
            ['pre-migrating'],
            'migrating',
            _MOVING,
            [states.RESIZE_PREP],
            {'task_state': states.RESIZE_MIGRATING},
        )
        self.done.add('powered_off')
        source_host = migration['source_compute']
        self.compute(
            src,
            source_host,
            PREP_SOURCE,
            apis(src).prep_snapshot_based_resize_at_source,
            migration,
        )
        self.step(
            src,
            mig,
            ['migrating'],
            'post-migrating',
            _MOVING,
            [states.RESIZE_MIGRATING],
            {'task_state': states.RESIZE_MIGRATED},
        )
        instance, _m = self.step(
            dst,
            mig,
            ['pre-migrating'],
            'post-migrating',
            _MOVING,
            [states.RESIZE_PREP],
            {'task_state': states.RESIZE_FINISH},
        )
        self.done.add('spawned')
        answer = self.compute(
            src,
            dest,
            FINISH_DEST,
            apis(dst).finish_snapshot_based_resize_at_dest,
            migration,
            instance=instance,
        )
        self._switch(migration, selected, answer.get('power_state'))

    def _switch(self, migration, selected, power):
        """The target takes the server: the source's copy hidden (its task
        kept, so that a show still reading it never says VERIFY_RESIZE
        from the source), the target's shown, the mapping switched, then
        the source's copy and migration end ``finished``."""
        src, dst, mig = self.source, self.target, migration['uuid']
        self.done.add('hidden')
        self.step(
            src,
            mig,
            ['post-migrating'],
            'post-migrating',
            _MOVING,
            [states.RESIZE_MIGRATED],
            {'hidden': True},
            {'hidden': True},
        )
        self.carry_actions(src, dst)
        self.step(
            dst,
            mig,
            ['post-migrating'],
            'finished',
            _MOVING,
            [states.RESIZE_FINISH],
            {
                'vm_state': states.RESIZED,
                'task_state': None,
                'hidden': False,
                'power_state': power if power is not None else states.RUNNING,
                'host': selected.service_host,
                'node': selected.nodename,
                'compute_node_uuid': selected.compute_node_uuid,
                'flavor': migration['new_flavor'],
                **cross_cell_arqs.switch_updates(migration),
            },
            {'hidden': False},
        )
        self.done.add('mapped')
        self.map_to(dst)
        self.step(
            src,
            mig,
            ['post-migrating'],
            'finished',
            _MOVING,
            [states.RESIZE_MIGRATED],
            {'vm_state': states.RESIZED, 'task_state': None},
        )

    def rollback(self, migration, selected, exc):
        """Back to before the move (each part tried on its own: what
        failed to undo is logged, the rest still undone)."""
        src, dst, mig = self.source, self.target, migration['uuid']
        apis = self.conductor.compute_api
        if 'spawned' in self.done:
            self._try(
                'drop the new guest',
                apis(dst).revert_snapshot_based_resize_at_dest,
                self.ctxt,
                selected.service_host,
                self.request_id,
                migration_obj.Migration.from_row(migration),
                timeout=self._timeout,
            )
        if 'powered_off' in self.done:
            self._try(
                'power the guest on again',
                apis(src).finish_revert_snapshot_based_resize_at_source,
                self.ctxt,
                migration['source_compute'],
                self.request_id,
                migration_obj.Migration.from_row(migration),
                timeout=self._timeout,
            )
        if 'mapped' in self.done:
            self._try('map the instance back', self.map_to, src)
        self._try(
            "delete the destination's ARQs",
            cross_cell_arqs.undo,
            self,
            migration,
            selected.service_host,
        )
        if 'copied' in self.done:
            self._try('drop the target copy', self.drop_copy, dst, mig)
        self._try(
            'give the allocation back',
            self.claims.undo,
            self.ctxt,
            self.uuid,
            mig,
        )
        stopped = was_stopped(migration)
        reason = 'The move to %s (cell %s) failed and was undone: %s' % (
            selected.service_host,
            self.target.name,
            getattr(exc, 'message', None) or exc,
        )
        fault = {
            'message': reason[:255],
            'details': ''.join(traceback.format_exception(exc)),
            'code': 500,
        }
        with self.db(src).session() as session:
            cell_migrations.set_status(session, mig, 'error', hidden=False)
            back = {
                'task_state': None,
                'hidden': False,
                'power_state': states.SHUTDOWN if stopped else states.RUNNING,
                'fault': fault,
            }
            row = instances.transition(session, self.uuid, _MOVING, back)
            if row is None:
                instances.transition(
                    session,
                    self.uuid,
                    [states.RESIZED],
                    dict(
                        back,
                        vm_state=states.STOPPED if stopped else states.ACTIVE,
                    ),
                )
            instance_actions.event_finish(
                session,
                self.uuid,
                self.request_id,
                EVENT,
                None,
                'Error',
                fault['details'],
                reason[:255],
            )
            instance_actions.finish(
                session, self.uuid, self.request_id, instance_actions.ERROR
            )

    def _try(self, what, func, *args, **kwargs):
        try:
            answer = func(*args, **kwargs)
        except Exception:  # noqa: BLE001 - the rest of the rollback goes on
            LOG.exception(
                'Rolling back the move of %s: could not %s', self.uuid, what
            )
            return
        if isinstance(answer, dict) and not answer.get('ok', True):
            LOG.warning(
                'Rolling back the move of %s: could not %s: %s',
                self.uuid,
                what,
                answer.get('error'),
            )


def start(conductor, ctxt, source, instance, migration, selected, request_id):
    """Carry ``instance`` (a dict of the source cell's row) to
    ``selected`` (a Selection of another cell) for ``migration`` (the
    source cell's dict, ``pre-migrating``, its claims held); True when
    the server shows VERIFY_RESIZE there."""
    target = conductor.cells.by_uuid(selected.cell_uuid)
    move = CrossCellMove(
        conductor, ctxt, source, target, instance['uuid'], request_id
    )
    return move.run(migration, selected)
