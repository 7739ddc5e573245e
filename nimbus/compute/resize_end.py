"""The end of a resize or cold migrate on the computes: confirm (the
source destroys the old guest and frees what it held), revert (the
destination drops the new guest, the source takes the server back) and
the destination's auto-confirm after ``[DEFAULT] resize_confirm_window``.

A mixin of :class:`nimbus.compute.resize.Resizes` (its ``_step``,
``_guarded``, ``_undo`` and ``arqs``); see that module for the whole
move.
"""

import dataclasses

from oslo_log import log as logging

from nimbus.common import instance_states as states
from nimbus.compute import move_arqs

LOG = logging.getLogger(__name__)


class ResizeEnd:
    # -- confirm (source) ------------------------------------------------------

    def confirm_resize(self, ctxt, request_id, migration):
        uuid = migration.instance_uuid

        def body():
            if migration.source_compute != migration.dest_compute:
                self.driver.destroy(uuid)
            self.arqs.delete(ctxt, _only(migration, move_arqs.source_arqs))
            self.placement.remove_allocations(ctxt, migration.uuid)
            stopped = self._was_stopped(migration)
            self._step(
                ctxt,
                migration,
                ['confirming'],
                'confirmed',
                [states.RESIZED],
                [states.RESIZE_CONFIRMING],
                {
                    'vm_state': states.STOPPED if stopped else states.ACTIVE,
                    'task_state': None,
                },
            )

        self._guarded(
            ctxt, migration, request_id, 'compute_confirm_resize', body
        )

    # -- revert (destination, then source) -------------------------------------

    def revert_resize(self, ctxt, request_id, migration):
        uuid = migration.instance_uuid

        def body():
            if migration.source_compute != migration.dest_compute:
                self.driver.destroy(uuid)
            self.arqs.delete(ctxt, _only(migration, move_arqs.dest_arqs))
            self.compute_api.finish_revert_resize(
                ctxt, migration.source_compute, uuid, request_id, migration
            )

        self._guarded(
            ctxt, migration, request_id, 'compute_revert_resize', body
        )

    def finish_revert_resize(self, ctxt, request_id, migration):
        uuid = migration.instance_uuid

        def body():
            stopped = self._was_stopped(migration)
            if migration.source_compute == migration.dest_compute:
                instance, _m = self._step(
                    ctxt,
                    migration,
                    ['reverting'],
                    'reverting',
                    [states.RESIZED],
                    [states.RESIZE_REVERTING],
                    {},
                )
                self.driver.spawn(
                    dataclasses.replace(instance, flavor=migration.old_flavor),
                    {},
                    self.arqs.attached(ctxt, move_arqs.source_arqs(migration)),
                    power_on=not stopped,
                )
            elif not stopped:
                self.driver.power_on(uuid)
            self._undo(ctxt, uuid, migration.uuid)
            self._step(
                ctxt,
                migration,
                ['reverting'],
                'reverted',
                [states.RESIZED],
                [states.RESIZE_REVERTING],
                {
                    'vm_state': states.STOPPED if stopped else states.ACTIVE,
                    'task_state': None,
                    'power_state': states.SHUTDOWN
                    if stopped
                    else states.RUNNING,
                    'host': self.host,
                    'node': migration.source_node,
                    'compute_node_uuid': (migration.details or {}).get(
                        'source_node_uuid'
                    ),
                    'flavor': migration.old_flavor,
                    'accel_uuids': move_arqs.source_arqs(migration),
                },
            )

        self._guarded(
            ctxt, migration, request_id, 'compute_finish_revert_resize', body
        )

    # -- auto-confirm (destination's periodic) ---------------------------------

    def auto_confirm(self, ctxt, seconds):
        """Confirm the moves that have waited in VERIFY_RESIZE on this
        host longer than ``seconds`` (``[DEFAULT] resize_confirm_window``):
        the cell conductor takes each for its confirm, the source is told
        as for a user's confirmResize."""
        for migration in self.conductor.unconfirmed_resizes(
            ctxt, self.host, seconds
        ):
            LOG.info(
                'Confirming the resize of %s (waited over %d s)',
                migration.instance_uuid,
                seconds,
            )
            self.compute_api.confirm_resize(
                ctxt,
                migration.source_compute,
                migration.instance_uuid,
                migration.details['request_id'],
                migration,
            )


def _only(migration, which):
    """The ARQs ``which`` (source or destination) of the migration that the
    other side does not hold too."""
    other = (
        move_arqs.dest_arqs
        if which is move_arqs.source_arqs
        else move_arqs.source_arqs
    )
    keep = set(other(migration))
    return [u for u in which(migration) if u not in keep]
