"""Resize and cold migrate on the computes (Nova's prep_resize,
resize_instance, finish_resize, confirm_resize, revert_resize and
finish_revert_resize).

The super conductor made the migration (``pre-migrating``), handed the
source's allocation to the migration's consumer and claimed the
destination for the instance (:mod:`nimbus.conductor.resize`). Then:

- destination, ``prep_resize``: the driver checks it can take the guest;
  on failure the next alternate of the same cell is claimed for the
  instance and gets the prep, and with none left the move is undone
  (the source's allocation given back, migration ``error``, the task
  cleared with a fault: the server stays on its source);
- source, ``resize_instance``: migration ``migrating``, task
  ``resize_migrating``; the guest is powered off; ``post-migrating``,
  ``resize_migrated``; the destination is told to finish;
- destination, ``finish_resize``: task ``resize_finish``; the guest is
  spawned with the new flavor (and powered off again for a server that
  was stopped); the instance's host, node and flavor are swapped and it
  is RESIZED (VERIFY_RESIZE); migration ``finished``;
- ``confirm_resize`` (source): the old guest is destroyed, the migration's
  allocation dropped, migration ``confirmed``, ACTIVE (or STOPPED);
- ``revert_resize`` (destination) drops the new guest, then
  ``finish_revert_resize`` (source): the old flavor, host and node come
  back, the guest is powered on (a stopped server stays off), the
  source's allocation goes back to the instance, migration ``reverted``.

Every state change is one call of the cell conductor's ``move_step``
(the migration's status and the instance's state in one transaction),
so a step delivered twice, or racing a delete, changes nothing.
"""

import dataclasses

from oslo_log import log as logging

from nimbus.common import instance_states as states
from nimbus.common.clients.placement_moves import INSTANCE
from nimbus.compute import action_events
from nimbus.compute import move_arqs
from nimbus.compute import resize_end

LOG = logging.getLogger(__name__)

_MOVING = (states.ACTIVE, states.STOPPED)


class StepLost(Exception):
    """A step's swap did not hold: the server was deleted, reset or moved
    meanwhile."""


class Resizes(resize_end.ResizeEnd):
    def __init__(
        self, host, driver, conductor, placement, compute_api, arqs=None
    ):
        """``compute_api``: a ComputeAPI on this host's cell bus (the
        other side of the move); ``arqs``: a
        :class:`~nimbus.compute.move_arqs.MoveArqs` (a move of a server
        with a device profile fails without one)."""
        self.host = host
        self.driver = driver
        self.conductor = conductor
        self.placement = placement
        self.compute_api = compute_api
        self.arqs = arqs or move_arqs.MoveArqs(None, None, None)

    # -- helpers ---------------------------------------------------------------

    def _event(self, ctxt, uuid, request_id, event, phase, **more):
        action_events.record(
            self.conductor,
            self.host,
            ctxt,
            uuid,
            request_id,
            event,
            phase,
            **more,
        )

    def _step(
        self,
        ctxt,
        migration,
        statuses,
        status,
        vm_states,
        tasks,
        updates,
        migration_updates=None,
    ):
        done = self.conductor.move_step(
            ctxt,
            migration.instance_uuid,
            migration.uuid,
            statuses,
            status,
            vm_states,
            tasks,
            updates,
            migration_updates,
        )
        if done is None:
            raise StepLost(
                'instance %s or migration %s changed meanwhile (deleted, '
                'reset or moved)' % (migration.instance_uuid, migration.uuid)
            )
        return done

    def _guarded(self, ctxt, migration, request_id, event, body):
        """Run ``body()`` inside event ``event``: its finish says how it
        went; a failure is logged (and handled by ``body``)."""
        uuid = migration.instance_uuid
        self._event(ctxt, uuid, request_id, event, 'start')
        try:
            body()
        except Exception as exc:  # noqa: BLE001 - a driver's failure is the move step's
            LOG.warning(
                '%s of %s failed on %s: %s', event, uuid, self.host, exc
            )
            self._event(
                ctxt,
                uuid,
                request_id,
                event,
                'finish',
                result='Error',
                **action_events.error_fields(exc),
            )
            return False
        self._event(ctxt, uuid, request_id, event, 'finish', result='Success')
        return True

    def _undo(self, ctxt, instance_uuid, migration_uuid):
        """The source's allocation back to the instance (its destination
        claim replaced in the same transaction); idempotent, as
        :meth:`nimbus.conductor.move_claims.MoveClaims.undo`."""
        self.placement.move_allocations(
            ctxt, migration_uuid, instance_uuid, target_type=INSTANCE
        )

    def _was_stopped(self, migration):
        return (migration.details or {}).get('vm_state') == states.STOPPED

    # -- destination: prep -----------------------------------------------------

    def prep_resize(self, ctxt, request_id, migration, selection, alternates):
        uuid = migration.instance_uuid
        lost = []

        def body():
            self.driver.prep_resize(uuid, migration.new_flavor)
            try:
                _inst, moved = self._step(
                    ctxt,
                    migration,
                    ['pre-migrating'],
                    'pre-migrating',
                    _MOVING,
                    [states.RESIZE_PREP],
                    {},
                    self._prep_updates(migration, selection),
                )
            except StepLost:
                # Undone meanwhile (the conductor's recovery of a move
                # left waiting): no alternate may claim anything now.
                lost.append(True)
                raise
            moved = self._bind_arqs(ctxt, moved, selection)
            try:
                self.compute_api.resize_instance(
                    ctxt, moved.source_compute, uuid, request_id, moved
                )
            except Exception:
                self.arqs.delete(ctxt, move_arqs.dest_arqs(moved))
                raise

        if self._guarded(
            ctxt, migration, request_id, 'compute_prep_resize', body
        ):
            return
        if not lost:
            self._reschedule(ctxt, request_id, migration, alternates)

    def _prep_updates(self, migration, selection):
        return {
            'dest_compute': self.host,
            'dest_host': self.host,
            'dest_node': selection.nodename,
            'details': dict(
                migration.details or {},
                dest_node_uuid=selection.compute_node_uuid,
            ),
        }

    def _bind_arqs(self, ctxt, migration, selection):
        """The new flavor's ARQs bound here (recorded on the migration
        first, so their events reach this host), before the source lets
        the guest go; a failure deletes them and fails the prep."""

        # Deliberately like prep_resize's step: the same transition, here
        # carrying only the migration's details (the ARQs).
        def record(details):
            return self._step(
                ctxt,
                migration,
                ['pre-migrating'],
                'pre-migrating',
                _MOVING,
                [states.RESIZE_PREP],
                {},
                {'details': details},
            )[1]

        return self.arqs.bind_recorded(
            ctxt, migration, selection, self.host, record
        )

    def _reschedule(self, ctxt, request_id, migration, alternates):
        """The prep failed here: the next alternate (same cell) takes the
        instance's claim and the prep; none left undoes the move."""
        uuid = migration.instance_uuid
        for index, alternate in enumerate(alternates):
            try:
                current = self.placement.get_allocations_for_consumer(
                    ctxt, uuid
                )
                self.placement.replace_allocations(
                    ctxt,
                    uuid,
                    {
                        rp: dict(alloc.get('resources') or {})
                        for rp, alloc in alternate.allocations.items()
                    },
                    current.get('project_id'),
                    current.get('user_id'),
                )
            except Exception:
                LOG.warning(
                    'Could not claim alternate %s for %s',
                    alternate.service_host,
                    uuid,
                    exc_info=True,
                )
                continue
            LOG.info(
                'Rescheduling the move of %s to %s',
                uuid,
                alternate.service_host,
            )
            self.compute_api.prep_resize(
                ctxt,
                alternate.service_host,
                uuid,
                request_id,
                migration,
                alternate,
                alternates[index + 1 :],
            )
            return
        self._undo(ctxt, uuid, migration.uuid)
        try:
            self._step(
                ctxt,
                migration,
                ['pre-migrating'],
                'error',
                _MOVING,
                [states.RESIZE_PREP],
                {
                    'task_state': None,
                    'fault': {
                        'message': 'No valid host was found: the move of '
                        'the server failed on every host tried.',
                        'code': 500,
                    },
                },
            )
        except StepLost as exc:
            LOG.info('Left %s as it is: %s', uuid, exc)

    # -- source: resize --------------------------------------------------------

    def resize_instance(self, ctxt, request_id, migration):
        uuid = migration.instance_uuid

        def body():
            _i, moved = self._step(
                ctxt,
                migration,
                ['pre-migrating'],
                'migrating',
                _MOVING,
                [states.RESIZE_PREP],
                {'task_state': states.RESIZE_MIGRATING},
            )
            if moved.source_compute != moved.dest_compute:
                self.driver.power_off(uuid)
            _i, moved = self._step(
                ctxt,
                moved,
                ['migrating'],
                'post-migrating',
                _MOVING,
                [states.RESIZE_MIGRATING],
                {'task_state': states.RESIZE_MIGRATED},
            )
            self.compute_api.finish_resize(
                ctxt, moved.dest_compute, uuid, request_id, moved
            )

        if not self._guarded(
            ctxt, migration, request_id, 'compute_resize_instance', body
        ):
            self._source_failed(ctxt, migration)

    def _source_failed(self, ctxt, migration):
        """As Nova: a source that could not let the guest go leaves the
        server in ERROR on its source and the migration in error; the
        destination's claim is replaced by the source's allocation again
        (the guest is still here), before the server shows ERROR; the
        destination's ARQs are deleted."""
        self._undo(ctxt, migration.instance_uuid, migration.uuid)
        self.arqs.delete(ctxt, move_arqs.dest_arqs(migration))
        try:
            self._step(
                ctxt,
                migration,
                ['pre-migrating', 'migrating', 'post-migrating'],
                'error',
                _MOVING,
                [
                    states.RESIZE_PREP,
                    states.RESIZE_MIGRATING,
                    states.RESIZE_MIGRATED,
                ],
                {'vm_state': states.ERROR, 'task_state': None},
            )
        except StepLost as exc:
            LOG.info('Left %s as it is: %s', migration.instance_uuid, exc)

    # -- destination: finish ---------------------------------------------------

    def finish_resize(self, ctxt, request_id, migration):
        def body():
            instance, moved = self._step(
                ctxt,
                migration,
                ['post-migrating'],
                'post-migrating',
                _MOVING,
                [states.RESIZE_MIGRATED],
                {'task_state': states.RESIZE_FINISH},
            )
            self.driver.spawn(
                dataclasses.replace(instance, flavor=moved.new_flavor),
                {},
                self.arqs.attached(ctxt, move_arqs.dest_arqs(moved)),
                power_on=not self._was_stopped(moved),
            )
            self.finish_spawned(ctxt, moved)

        if not self._guarded(
            ctxt, migration, request_id, 'compute_finish_resize', body
        ):
            self._finish_failed(ctxt, migration)

    def finish_spawned(self, ctxt, moved):
        """The finish's last step once the guest is spawned here (and, for
        a server stopped before the move, left off: spawned without
        starting it, or shut down if a guest from before a restart runs),
        then RESIZED."""
        power = states.RUNNING
        if self._was_stopped(moved):
            uuid = moved.instance_uuid
            if self.driver.power_state(uuid) != states.SHUTDOWN:
                self.driver.power_off(uuid)
            power = states.SHUTDOWN
        self._step(
            ctxt,
            moved,
            ['post-migrating'],
            'finished',
            _MOVING,
            [states.RESIZE_FINISH],
            self.finished_updates(moved, power),
        )

    def finished_updates(self, moved, power):
        """The instance's side of a finish's last step: RESIZED on this
        host (the destination) with the new flavor."""
        return {
            'vm_state': states.RESIZED,
            'task_state': None,
            'power_state': power,
            'host': self.host,
            'node': moved.dest_node,
            'compute_node_uuid': (moved.details or {}).get('dest_node_uuid'),
            'flavor': moved.new_flavor,
            'accel_uuids': move_arqs.dest_arqs(moved),
        }

    def _finish_failed(self, ctxt, migration):
        """As Nova: a failed finish leaves the server in ERROR (on the
        destination's claim) and the migration in error; the
        destination's ARQs are deleted (the source's stay with the
        instance)."""
        self.arqs.delete(ctxt, move_arqs.dest_arqs(migration))
        try:
            self._step(
                ctxt,
                migration,
                ['post-migrating'],
                'error',
                _MOVING,
                [states.RESIZE_MIGRATED, states.RESIZE_FINISH],
                {'vm_state': states.ERROR, 'task_state': None},
            )
        except StepLost:
            pass
