"""Live migration on the computes (Nova's check_can_live_migrate_destination,
pre_live_migration, live_migration, post_live_migration_at_destination,
rollback_live_migration_at_destination, live_migration_abort and
live_migration_force_complete).

The super conductor took the destination for the instance's consumer and
handed the source's allocation to the migration's
(:mod:`nimbus.conductor.live_migrate`), and the destination passed its
check. Then, on the source (:meth:`LiveMigrations.live_migration`):

- migration ``queued``, then ``preparing``; the destination's
  ``pre_live_migration`` (a call) gets ready for the guest and, with a
  device profile, binds and awaits ARQs of its own
  (:mod:`nimbus.compute.move_arqs`);
- ``running``: the simulated copy
  (:class:`~nimbus.compute.live_copy.Copy`) moves the guest's memory
  (and its disk for a block migration) in steps, each written to
  the migration's ``memory_*``/``disk_*`` byte counts (what
  ``GET /servers/{id}/migrations`` shows); an abort stops it, a force
  complete ends it at once;
- the destination's ``post_live_migration_at_destination`` (a call)
  starts the guest there and swaps the instance's host and node, the task
  cleared (the destination's ARQs become the instance's); the source
  drops its guest, its ARQs and the migration's allocation (no
  confirm step for a live migration) and the migration ends
  ``completed``.

A failure anywhere before the swap, or an abort, rolls back
(:meth:`LiveMigrations.rollback`): the migration's allocation goes back
to the instance (its destination claim replaced in the same
transaction), the migration ends ``error`` (``cancelled`` for an abort)
and the server keeps running on its source with no task; the
destination is told to drop what it made (its ARQs too). A source
that restarts in the middle rolls its live migrations back
(:func:`recover`).

Every state change is one ``move_step`` of the cell conductor (the
migration's status and the instance's state in one transaction).
"""

import dataclasses
import threading
import traceback

from oslo_log import log as logging

from nimbus.common import instance_states as states
from nimbus.common.clients.placement_moves import INSTANCE
from nimbus.compute import live_copy
from nimbus.compute import move_arqs
from nimbus.compute import resize

LOG = logging.getLogger(__name__)

LIVE_STATES = (states.ACTIVE, states.PAUSED)
IN_FLIGHT = ('accepted', 'queued', 'preparing', 'running')


class Failed(Exception):
    """A step of the live migration failed on the other host."""


class HostDied(BaseException):
    """The driver says the host died (the fake driver's ``halt``, a
    simulated ``kill -9``): the copy stops with nothing rolled back (a
    BaseException, past every ``except Exception``)."""


class LiveMigrations(resize.Resizes):
    """One host's part of live migrations, as source or destination (the
    event and step helpers are the cold moves')."""

    def __init__(
        self,
        host,
        driver,
        conductor,
        placement,
        compute_api,
        conf=None,
        arqs=None,
    ):
        """``arqs``: a :class:`~nimbus.compute.move_arqs.MoveArqs` (the
        live migration of a server with a device profile fails without
        one)."""
        super().__init__(host, driver, conductor, placement, compute_api, arqs)
        opts = getattr(conf, 'fake_driver', None)
        self.copy = live_copy.Copy(
            getattr(opts, 'live_migration_seconds', 0.0),
            getattr(opts, 'live_migration_step_seconds', 0.5),
        )
        self._jobs = {}
        self._lock = threading.Lock()

    def _live_step(
        self, ctxt, migration, statuses, status, updates, more=None
    ):
        return self._step(
            ctxt,
            migration,
            statuses,
            status,
            LIVE_STATES,
            [states.MIGRATING],
            updates,
            more,
        )

    # -- destination -----------------------------------------------------------

    def check_can_live_migrate_destination(
        self, ctxt, request_id, migration, block_migration, disk_over_commit
    ):
        answer = {}

        def body():
            self.driver.check_can_live_migrate_destination(
                migration.instance_uuid, migration.new_flavor
            )
            answer['migrate_data'] = {
                'block_migration': live_copy.resolve_block_migration(
                    block_migration
                ),
                'disk_over_commit': bool(disk_over_commit),
            }

        ok = self._guarded(
            ctxt,
            migration,
            request_id,
            'compute_check_can_live_migrate_destination',
            body,
        )
        if not ok:
            return {
                'ok': False,
                'error': 'Migration pre-check error: %s cannot take the '
                'guest' % self.host,
            }
        return dict(answer, ok=True)

    def pre_live_migration(self, ctxt, request_id, migration, migrate_data):
        def record(details):
            return self._live_step(
                ctxt,
                migration,
                ['preparing'],
                'preparing',
                {},
                {'details': details},
            )[1]

        def body():
            self.driver.check_can_live_migrate_destination(
                migration.instance_uuid, migration.new_flavor
            )
            # The server's device profile bound here before the copy
            # starts (the source keeps its own until the move is over).
            self.arqs.bind_recorded(
                ctxt,
                migration,
                move_arqs.live_selection(migration, self.host),
                self.host,
                record,
            )

        ok = self._guarded(
            ctxt, migration, request_id, 'compute_pre_live_migration', body
        )
        return {'ok': ok, 'error': None if ok else 'pre_live_migration failed'}

    def post_live_migration_at_destination(self, ctxt, request_id, migration):
        uuid = migration.instance_uuid

        def body():
            instance, moved = self._live_step(
                ctxt, migration, ['running'], 'running', {}
            )
            self.driver.spawn(
                dataclasses.replace(instance, flavor=moved.new_flavor),
                {},
                self.arqs.attached(ctxt, move_arqs.dest_arqs(moved)),
            )
            power = states.RUNNING
            if instance.vm_state == states.PAUSED:
                self.driver.pause(uuid)
                power = states.PAUSED_POWER
            self._live_step(
                ctxt,
                moved,
                ['running'],
                'running',
                {
                    'task_state': None,
                    'power_state': power,
                    'host': self.host,
                    'node': moved.dest_node,
                    'compute_node_uuid': (moved.details or {}).get(
                        'dest_node_uuid'
                    ),
                    'accel_uuids': move_arqs.dest_arqs(moved),
                },
            )

        ok = self._guarded(
            ctxt,
            migration,
            request_id,
            'compute_post_live_migration_at_destination',
            body,
        )
        if not ok:
            self.driver.destroy(uuid)
        return {'ok': ok, 'error': None if ok else 'the destination failed'}

    def rollback_at_destination(self, ctxt, request_id, migration):
        def body():
            self.driver.destroy(migration.instance_uuid)

        self._guarded(
            ctxt,
            migration,
            request_id,
            'compute_rollback_live_migration_at_destination',
            body,
        )

    # -- source ----------------------------------------------------------------

    def live_migration(self, ctxt, request_id, migration, migrate_data):
        uuid = migration.instance_uuid
        job = live_copy.Job()
        with self._lock:
            self._jobs[migration.uuid] = job
        outcome = {}

        def body():
            try:
                self._migrate(ctxt, request_id, migration, migrate_data, job)
            except live_copy.Aborted as exc:
                outcome['status'] = 'cancelled'
                raise Failed('the live migration was aborted') from exc
            except Exception as exc:
                outcome['status'] = 'error'
                outcome['error'] = exc
                raise

        try:
            ok = self._guarded(
                ctxt, migration, request_id, 'compute_live_migration', body
            )
        finally:
            with self._lock:
                self._jobs.pop(migration.uuid, None)
        if not ok and outcome.get('status'):
            self.rollback(
                ctxt,
                request_id,
                migration,
                outcome['status'],
                outcome.get('error'),
            )
        LOG.info('Live migration of %s: %s', uuid, 'done' if ok else outcome)

    def _migrate(self, ctxt, request_id, migration, migrate_data, job):
        uuid = migration.instance_uuid
        _i, moved = self._live_step(
            ctxt, migration, ['accepted'], 'queued', {}
        )
        if job.aborted:
            raise live_copy.Aborted()
        _i, moved = self._live_step(ctxt, moved, ['queued'], 'preparing', {})
        answer = self.compute_api.pre_live_migration(
            ctxt, moved.dest_compute, uuid, request_id, moved, migrate_data
        )
        if not (answer or {}).get('ok'):
            raise Failed(
                'pre_live_migration failed on %s: %s'
                % (moved.dest_compute, (answer or {}).get('error'))
            )
        if job.aborted:
            raise live_copy.Aborted()
        memory, disk = self.copy.totals(
            moved.new_flavor, migrate_data.get('block_migration', True)
        )
        _i, moved = self._live_step(
            ctxt,
            moved,
            ['preparing'],
            'running',
            {},
            live_copy.progress(memory, disk, 0.0),
        )

        def report(columns):
            halted = getattr(self.driver, 'is_halted', None)
            if halted is not None and halted():
                # The host died (kill -9): nothing more is done here; its
                # restart rolls the move back (recover).
                raise HostDied(self.host)
            self._live_step(ctxt, moved, ['running'], 'running', {}, columns)

        self.copy.run(job, memory, disk, report)
        answer = self.compute_api.post_live_migration_at_destination(
            ctxt, moved.dest_compute, uuid, request_id, moved
        )
        if not (answer or {}).get('ok'):
            raise Failed(
                'post_live_migration_at_destination failed on %s: %s'
                % (moved.dest_compute, (answer or {}).get('error'))
            )
        # The guest runs on the destination now: nothing here rolls back.
        try:
            self.driver.destroy(uuid)
            self.arqs.delete(ctxt, move_arqs.source_arqs(moved))
            self.placement.remove_allocations(ctxt, moved.uuid)
            self.conductor.migration_set_status(
                ctxt, moved.uuid, 'completed', ['running']
            )
        except Exception:
            LOG.exception(
                'Live migration of %s to %s: the source could not clean '
                'up (the audit finds what is left)',
                uuid,
                moved.dest_compute,
            )

    def rollback(self, ctxt, request_id, migration, status, error=None):
        """Back on the source: the allocation, the migration ``status``
        (error or cancelled), the task cleared, the destination's ARQs
        deleted (here, so a dead destination leaks none; the server
        keeps the source's); the destination told."""
        uuid = migration.instance_uuid
        self.placement.move_allocations(
            ctxt, migration.uuid, uuid, target_type=INSTANCE
        )
        updates = {'task_state': None}
        if error is not None:
            updates['fault'] = {
                'message': ('Live migration failed: %s' % error)[:255],
                'details': ''.join(traceback.format_exception(error)),
                'code': 500,
            }
        try:
            _i, moved = self._live_step(
                ctxt, migration, list(IN_FLIGHT), status, updates
            )
        except resize.StepLost as exc:
            LOG.info('Left %s as it is: %s', uuid, exc)
            return
        self.arqs.delete(ctxt, move_arqs.dest_arqs(moved))
        if moved.dest_compute and moved.dest_compute != self.host:
            try:
                self.compute_api.rollback_live_migration_at_destination(
                    ctxt, moved.dest_compute, uuid, request_id, moved
                )
            except Exception:
                LOG.warning(
                    'Could not tell %s to roll back %s',
                    moved.dest_compute,
                    uuid,
                    exc_info=True,
                )

    # -- abort and force complete (source) -------------------------------------

    def abort_all(self):
        """The service stops (SIGTERM): every copy under way here is
        aborted (each rolls back, ``cancelled``) rather than holding the
        stop for the rest of its copy."""
        with self._lock:
            jobs = list(self._jobs.values())
        for job in jobs:
            job.abort()

    def _signal(self, ctxt, uuid, request_id, migration_uuid, event, how):
        self._event(ctxt, uuid, request_id, event, 'start')
        with self._lock:
            job = self._jobs.get(migration_uuid)
        # Deliberately like the error finishes of resize and shelve: no
        # exception here, only a message.
        if job is None:
            self._event(
                ctxt,
                uuid,
                request_id,
                event,
                'finish',
                result='Error',
                details='no live migration %s runs on %s'
                % (migration_uuid, self.host),
            )
            return False
        how(job)
        self._event(ctxt, uuid, request_id, event, 'finish', result='Success')
        return True

    def abort(self, ctxt, instance_uuid, request_id, migration_uuid):
        return self._signal(
            ctxt,
            instance_uuid,
            request_id,
            migration_uuid,
            'compute_live_migration_abort',
            live_copy.Job.abort,
        )

    def force_complete(self, ctxt, instance_uuid, request_id, migration_uuid):
        return self._signal(
            ctxt,
            instance_uuid,
            request_id,
            migration_uuid,
            'compute_live_migration_force_complete',
            live_copy.Job.force,
        )


def recover(moves, ctxt):
    """After a restart of the source: its live migrations that were under
    way (queued, preparing, running) cannot go on (the copy died with the
    process); each is rolled back (``error``), the server running on this
    host with no task."""
    try:
        found = moves.conductor.live_migrations_from(ctxt, moves.host)
    except Exception:
        LOG.warning(
            'Could not list the live migrations of %s',
            moves.host,
            exc_info=True,
        )
        return []
    for migration in found:
        LOG.info(
            'Rolling back the live migration of %s interrupted by a restart',
            migration.instance_uuid,
        )
        moves.rollback(
            ctxt,
            (migration.details or {}).get('request_id') or 'req-recovery',
            migration,
            'error',
            RuntimeError(
                '%s restarted during the live migration' % moves.host
            ),
        )
    return found
