"""A compute's part of a resize or cold migrate to another cell (Nova's
snapshot-based resize, since Ussuri): the guest work only.

The super conductor drives such a move (:mod:`nimbus.conductor.cross_cell_resize`):
it owns both cells' databases, so it records every state; the computes
of the two cells share no bus and never talk to each other. Each step
here is one call answered ``{'ok': bool, 'error': str, ...}``:

- destination, ``prep_at_dest``: the driver checks it can take the guest
  with the new flavor; for a new flavor with a device profile (compute
  RPC 1.8) ARQs of that profile are created, bound to this host and the
  device providers the super conductor recorded from the scheduler's
  allocation request (``dest_device_mappings``), recorded on the target
  cell's copy of the migration (``dest_accel_uuids``, through this
  cell's conductor) and awaited (``accelerator-request-bound``) before
  the answer, so before the source lets the guest go; a failed create,
  bind or wait deletes them and refuses the step
  (:meth:`~nimbus.compute.move_arqs.MoveArqs.bind_recorded`);
- source, ``prep_at_source``: the guest powered off (kept until the
  confirm);
- destination, ``finish_at_dest``: the guest spawned with the new
  flavor and the destination's ARQs (powered off again for a server that
  was stopped);
- source, ``confirm_at_source``: the old guest destroyed;
- destination, ``revert_at_dest``: the new guest destroyed;
- source, ``finish_revert_at_source``: the old guest powered on (a
  stopped server stays off).

Each is idempotent: a guest already gone, off or on is left so. The
super conductor deletes the ARQs a confirm, a revert or a rollback
frees (:mod:`nimbus.conductor.cross_cell_arqs`).
"""

import dataclasses

from oslo_log import log as logging

from nimbus.common import instance_states as states
from nimbus.compute import arq_wait
from nimbus.compute import move_arqs

LOG = logging.getLogger(__name__)


class ArqsNotRecorded(Exception):
    """The destination's ARQs could not be recorded on the move (they
    are deleted)."""


def _was_stopped(migration):
    return (migration.details or {}).get('vm_state') == states.STOPPED


class CrossCellSteps:
    def __init__(self, host, driver, arqs=None, conductor=None):
        """``arqs``: a :class:`~nimbus.compute.move_arqs.MoveArqs`;
        ``conductor``: this cell's conductor client (the ARQs' record)."""
        self.host = host
        self.driver = driver
        self.arqs = arqs or move_arqs.MoveArqs(None, None, None)
        self.conductor = conductor

    def _has(self, uuid):
        return uuid in set(self.driver.list_instances())

    def prep_at_dest(self, ctxt, migration):
        self.driver.prep_resize(migration.instance_uuid, migration.new_flavor)
        if not move_arqs.profile_of(migration.new_flavor):
            return {'ok': True}
        try:
            moved = self.arqs.bind_recorded(
                ctxt,
                migration,
                move_arqs.live_selection(migration, self.host),
                self.host,
                lambda details: self._record(ctxt, migration, details),
            )
        except (arq_wait.AcceleratorBindFailed, ArqsNotRecorded) as exc:
            return {'ok': False, 'error': str(exc)}
        return {'ok': True, 'accel_uuids': move_arqs.dest_arqs(moved)}

    def _record(self, ctxt, migration, details):
        """The destination's ARQs on the target cell's (hidden) copy of
        the migration, still ``pre-migrating``; the migration after."""
        if self.conductor is None:
            raise ArqsNotRecorded('no cell conductor to record the ARQs')
        done = self.conductor.move_step(
            ctxt,
            migration.instance_uuid,
            migration.uuid,
            ['pre-migrating'],
            'pre-migrating',
            [states.ACTIVE, states.STOPPED],
            [states.RESIZE_PREP],
            {},
            {'details': details},
        )
        if done is None:
            raise ArqsNotRecorded(
                'the move of %s changed meanwhile (undone, deleted or '
                'reset)' % migration.instance_uuid
            )
        return done[1]

    def prep_at_source(self, ctxt, migration):
        uuid = migration.instance_uuid
        if not self._has(uuid):
            return {
                'ok': False,
                'error': 'no guest %s on %s' % (uuid, self.host),
            }
        self.driver.power_off(uuid)
        return {'ok': True}

    def finish_at_dest(self, ctxt, migration, instance):
        uuid = migration.instance_uuid
        stopped = _was_stopped(migration)
        if not self._has(uuid):
            self.driver.spawn(
                dataclasses.replace(instance, flavor=migration.new_flavor),
                {},
                self.arqs.attached(ctxt, move_arqs.dest_arqs(migration)),
                power_on=not stopped,
            )
        power = states.RUNNING
        if stopped:
            # A guest spawned before a restart may have been started.
            if self.driver.power_state(uuid) != states.SHUTDOWN:
                self.driver.power_off(uuid)
            power = states.SHUTDOWN
        return {'ok': True, 'power_state': power}

    def confirm_at_source(self, ctxt, migration):
        self.driver.destroy(migration.instance_uuid)
        return {'ok': True}

    def revert_at_dest(self, ctxt, migration):
        self.driver.destroy(migration.instance_uuid)
        return {'ok': True}

    def finish_revert_at_source(self, ctxt, migration):
        uuid = migration.instance_uuid
        if not self._has(uuid):
            return {
                'ok': False,
                'error': 'no guest %s on %s' % (uuid, self.host),
            }
        if _was_stopped(migration):
            self.driver.power_off(uuid)
            return {'ok': True, 'power_state': states.SHUTDOWN}
        self.driver.power_on(uuid)
        return {'ok': True, 'power_state': states.RUNNING}
