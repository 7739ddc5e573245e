"""The super conductor's part of unshelve and evacuate (issue 24,
section 2; the compute's is :mod:`nimbus.compute.shelve`).

Both run on the super conductor's pool after the API took the task
(``unshelving``, ``rebuilding``) and started the instance action:

- unshelve of a SHELVED server: its own host starts it again (no
  scheduling). Of a SHELVED_OFFLOADED one: the stored request spec
  (:func:`~nimbus.conductor.move_claims.stored_spec`), with the zone or
  the host the request asked for (2.77, 2.91), goes to the scheduler,
  which claims the chosen host for the instance (no migration consumer:
  the instance held nothing while offloaded); ARQs of a device profile
  are created and bound there; the chosen compute spawns the guest from
  the shelved image. No valid host: back to SHELVED_OFFLOADED with a
  fault, the ``schedule_instances`` event in Error, nothing allocated.
  Once the compute answers the server is ACTIVE, the shelved image is
  deleted.
- evacuate: the migration (type evacuation) goes accepted ->
  pre-migrating; the scheduler picks a host other than the (down) source
  (the requested one, filtered, from ``dest_host``) while the source's
  allocation is handed to the migration consumer
  (:class:`~nimbus.conductor.move_claims.MoveClaims`); the destination
  rebuilds the guest and the migration is ``done``. The source, when it
  starts again, drops the migration's allocation and marks it
  ``completed`` (:func:`nimbus.compute.shelve.clean_evacuated`). Any
  failure: migration ``error`` (no host) or ``failed`` (the rebuild),
  the instance ERROR with a fault, the source's allocation given back.
"""

from oslo_log import log as logging
import oslo_messaging as messaging

from nimbus.common import exception
from nimbus.common import instance_states as states
from nimbus.common.objects import migration as migration_obj
from nimbus.conductor import accelerators
from nimbus.conductor import move_claims
from nimbus.conductor import zones
from nimbus.db import cell_instances as instances
from nimbus.db import cell_migrations
from nimbus.db import images as image_rows
from nimbus.db import instance_actions
from nimbus.db import request_specs

LOG = logging.getLogger(__name__)

SCHEDULE_EVENT = 'schedule_instances'
EVACUATE_EVENT = 'conductor_rebuild_server'
IMAGE_KEY = 'shelved_image_id'


def _reason(exc):
    return (
        getattr(exc, 'message', None)
        or getattr(exc, 'reason', None)
        or str(exc)
        or type(exc).__name__
    )


class ShelveMoves:
    """``conductor``: the :class:`~nimbus.conductor.super_conductor.
    SuperConductor` (its API database, cells, scheduler, placement,
    accelerator binder and compute clients)."""

    def __init__(self, conductor):
        self.conductor = conductor
        self.claims = move_claims.MoveClaims(
            conductor.scheduler, conductor.placement
        )

    @property
    def _timeout(self):
        conf = self.conductor.conf
        return max(int(getattr(conf, 'rpc_response_timeout', 60)), 60) * 3

    def _cell_row(self, uuid):
        cell = self.conductor.cells.cell_for_instance(uuid)
        with self.conductor.cells.db(cell).session() as session:
            row = instances.get(session, uuid)
            if row is None:
                return cell, None
            record = instances.to_dict(row)
            record['server_attributes'] = dict(row.server_attributes or {})
            return cell, record

    def _event(self, cell, uuid, request_id, event, error=None, start=False):
        with self.conductor.cells.db(cell).session() as session:
            if start:
                instance_actions.event_start(
                    session, uuid, request_id, event, None
                )
                return
            instance_actions.event_finish(
                session,
                uuid,
                request_id,
                event,
                None,
                instance_actions.ERROR if error else 'Success',
                details=error,
            )

    def _swap(self, cell, uuid, vm_states, tasks, updates):
        with self.conductor.cells.db(cell).session() as session:
            return instances.transition(
                session,
                uuid,
                list(vm_states),
                updates,
                expected_task_states=list(tasks),
            )

    # -- unshelve ------------------------------------------------------------

    def unshelve(self, ctxt, uuid, request_id, zone, host, unpin):
        cell, record = self._cell_row(uuid)
        if record is None or record.get('task_state') != states.UNSHELVING:
            LOG.info('Instance %s is not unshelving; nothing to do', uuid)
            return
        attributes = record.get('server_attributes') or {}
        image_id = attributes.get(IMAGE_KEY)
        api = self.conductor.compute_api(cell)
        if record['vm_state'] == states.SHELVED:
            answer = self._ask(
                uuid,
                lambda: api.unshelve_instance(
                    ctxt,
                    record['host'],
                    uuid,
                    request_id,
                    image_id=image_id,
                    timeout=self._timeout,
                ),
            )
            if answer is not None and not answer.get('ok'):
                self._unshelve_back(cell, record, answer.get('error'))
        else:
            answer = self._unshelve_offloaded(
                ctxt, cell, record, request_id, image_id, zone, host, unpin
            )
            if answer is None:
                return
        if (answer or {}).get('ok'):
            self._forget_image(cell, uuid, image_id)

    def _unshelve_offloaded(
        self, ctxt, cell, record, request_id, image_id, zone, host, unpin
    ):
        uuid = record['uuid']
        stored = move_claims.stored_spec(self.conductor.api_db, uuid)
        if stored is None:
            return self._no_host(cell, uuid, request_id, 'no request spec')
        if unpin:
            stored.availability_zone = None
        elif zone:
            stored.availability_zone = zone
        spec = move_claims.move_spec(
            stored, uuid, destination={'host': host} if host else None
        )
        self._event(cell, uuid, request_id, SCHEDULE_EVENT, start=True)
        try:
            host_list = self.claims.schedule(ctxt, spec, uuid, None)
        except Exception as exc:  # noqa: BLE001 - any scheduling failure: no host
            return self._no_host(cell, uuid, request_id, _reason(exc))
        if not host_list:
            return self._no_host(cell, uuid, request_id, 'no host')
        selected = host_list[0]
        self._event(cell, uuid, request_id, SCHEDULE_EVENT)
        if zone or unpin:
            with self.conductor.api_db.session() as session:
                request_specs.replace(session, uuid, stored)
        accel = self._bind(ctxt, cell, record, spec, selected)
        if accel is None:
            self.claims.undo(ctxt, uuid, None)
            self._unshelve_back(
                cell, record, 'the ARQs could not be bound on the host'
            )
            return {'ok': False}
        self._place(cell, uuid, selected.service_host, zone, unpin)
        answer = self._ask(
            uuid,
            lambda: self.conductor.compute_api(cell).unshelve_instance(
                ctxt,
                selected.service_host,
                uuid,
                request_id,
                image_id=image_id,
                selection=selected,
                accel_uuids=accel,
                timeout=self._timeout,
            ),
        )
        if answer is not None and not answer.get('ok'):
            self.claims.undo(ctxt, uuid, None)
            self._drop_arqs(ctxt, accel)
            self._unshelve_back(cell, record, answer.get('error'))
        return answer

    def _ask(self, uuid, call):
        """The compute's answer to ``call()``. A call that could not be
        made is a failure; None when no answer came in time (the compute
        may still be at work: the instance is left in its task)."""
        try:
            return call() or {'ok': False, 'error': 'no answer'}
        except messaging.MessagingTimeout:
            LOG.error(
                'Instance %s: no answer from its compute in time; left in '
                'its task',
                uuid,
            )
            return None
        except Exception as exc:  # noqa: BLE001 - the compute's failure is answered
            LOG.warning('Instance %s: the compute failed: %s', uuid, exc)
            return {'ok': False, 'error': str(exc)}

    def _unshelve_back(self, cell, record, reason):
        """A failed unshelve the compute did not settle: the task back,
        an offloaded server on no host again, with a fault."""
        updates = {
            'task_state': None,
            'fault': {
                'message': ('Unshelve failed: %s' % reason)[:255],
                'details': reason,
                'code': 500,
            },
        }
        if record['vm_state'] == states.SHELVED_OFFLOADED:
            updates.update(host=None, node=None, compute_node_uuid=None)
        self._swap(
            cell,
            record['uuid'],
            [record['vm_state']],
            [states.UNSHELVING, states.SPAWNING],
            updates,
        )

    def _place(self, cell, uuid, host, zone, unpin):
        """The instance's zone is its new host's (as a build's); the pin
        follows the request (2.77 sets it, 2.91's null clears it)."""
        default = zones.default_zone(self.conductor.conf)
        with self.conductor.api_db.session() as api_session:
            with self.conductor.cells.db(cell).session() as session:
                host_zone = zones.host_zone(
                    api_session, session, host, default
                )
        self._swap(
            cell,
            uuid,
            [states.SHELVED_OFFLOADED],
            [states.UNSHELVING],
            {'availability_zone': host_zone},
        )
        if zone or unpin:
            with self.conductor.cells.db(cell).session() as session:
                instances.update_attributes(
                    session,
                    uuid,
                    {'pinned_availability_zone': None if unpin else zone},
                )

    def _no_host(self, cell, uuid, request_id, reason):
        LOG.info('No host to unshelve %s on: %s', uuid, reason)
        self._swap(
            cell,
            uuid,
            [states.SHELVED_OFFLOADED],
            [states.UNSHELVING],
            {
                'task_state': None,
                'fault': {
                    'message': 'No valid host was found. %s' % reason,
                    'details': reason,
                    'code': 400,
                },
            },
        )
        self._event(cell, uuid, request_id, SCHEDULE_EVENT, error=reason)
        return None

    def _forget_image(self, cell, uuid, image_id):
        """The server runs again: its shelved image goes."""
        with self.conductor.cells.db(cell).session() as session:
            instances.update_attributes(session, uuid, {IMAGE_KEY: None})
        if image_id:
            with self.conductor.api_db.session() as session:
                image_rows.delete(session, image_id)
            LOG.info('Deleted the shelved image %s of %s', image_id, uuid)

    # -- accelerators ----------------------------------------------------------

    def _bind(self, ctxt, cell, record, spec, selection):
        """New ARQs bound on the chosen host (the old ones are gone or
        deleted here); their uuids, stored on the instance; None when they
        cannot be bound."""
        if not spec.device_profile:
            return []
        binder = self.conductor.accelerator
        if binder is not None and record.get('accel_uuids'):
            binder.delete(ctxt, record['accel_uuids'])
        try:
            uuids = accelerators.bind_for_build(
                binder, ctxt, record['uuid'], spec, selection
            )
        except accelerators.AcceleratorBindError as exc:
            LOG.warning('ARQs of %s: %s', record['uuid'], exc)
            return None
        self._swap(
            cell,
            record['uuid'],
            [record['vm_state']],
            [record['task_state']],
            {'accel_uuids': uuids},
        )
        return uuids

    def _drop_arqs(self, ctxt, accel):
        if accel and self.conductor.accelerator is not None:
            self.conductor.accelerator.delete(ctxt, accel)

    # -- evacuate ----------------------------------------------------------------

    def evacuate(self, ctxt, uuid, request_id, migration_uuid, power_on):
        cell, record = self._cell_row(uuid)
        with self.conductor.cells.db(cell).session() as session:
            row = cell_migrations.get(session, migration_uuid)
            held = row is not None and cell_migrations.set_status(
                session, migration_uuid, 'pre-migrating', ['accepted']
            )
        if not held or record is None:
            LOG.info('Evacuation %s is not accepted; dropped', migration_uuid)
            return
        migration = migration_obj.Migration.from_row(row)
        stored = move_claims.stored_spec(self.conductor.api_db, uuid)
        self._event(cell, uuid, request_id, EVACUATE_EVENT, start=True)
        try:
            if stored is None:
                raise exception.NoValidHost(reason='no request spec')
            spec = move_claims.move_spec(
                stored,
                uuid,
                ignore_hosts=[migration.source_compute],
                destination=(
                    {'host': migration.dest_host}
                    if migration.dest_host
                    else None
                ),
            )
            host_list = self.claims.schedule(ctxt, spec, uuid, migration_uuid)
            if not host_list:
                raise exception.NoValidHost(reason='no host')
        except Exception as exc:  # noqa: BLE001 - any failure fails the evacuation
            return self._evacuate_failed(
                ctxt, cell, uuid, request_id, migration, 'error', exc
            )
        selected = host_list[0]
        with self.conductor.cells.db(cell).session() as session:
            cell_migrations.update(
                session,
                migration_uuid,
                dest_compute=selected.service_host,
                dest_node=selected.nodename or selected.service_host,
                dest_host=selected.service_host,
            )
        migration.dest_compute = selected.service_host
        accel = self._bind(ctxt, cell, record, spec, selected)
        if accel is None:
            return self._evacuate_failed(
                ctxt,
                cell,
                uuid,
                request_id,
                migration,
                'failed',
                RuntimeError('the ARQs could not be bound on the destination'),
            )
        self._event(cell, uuid, request_id, EVACUATE_EVENT)
        # Deliberately like the unshelve's ask: both wait for the host's
        # answer, but to different RPC methods with different arguments.
        answer = self._ask(
            uuid,
            lambda: self.conductor.compute_api(cell).evacuate_instance(
                ctxt,
                selected.service_host,
                uuid,
                request_id,
                migration,
                selected,
                power_on=power_on,
                accel_uuids=accel,
                timeout=self._timeout,
            ),
        )
        if answer is None:
            return
        if answer.get('ok'):
            with self.conductor.cells.db(cell).session() as session:
                cell_migrations.set_status(
                    session, migration_uuid, 'done', ['pre-migrating']
                )
            LOG.info('Evacuation %s of %s done', migration_uuid, uuid)
            return
        self._drop_arqs(ctxt, accel)
        self._evacuate_failed(
            ctxt,
            cell,
            uuid,
            request_id,
            migration,
            'failed',
            RuntimeError(answer.get('error') or 'the rebuild failed'),
            event=False,  # the compute's event says why
        )

    def _evacuate_failed(
        self, ctxt, cell, uuid, request_id, migration, status, exc, event=True
    ):
        reason = _reason(exc)
        LOG.warning('Evacuation of %s failed: %s', uuid, reason)
        self.claims.undo(ctxt, uuid, migration.uuid)
        with self.conductor.cells.db(cell).session() as session:
            cell_migrations.set_status(
                session, migration.uuid, status, ['pre-migrating']
            )
        self._swap(
            cell,
            uuid,
            states.ACTIONS['evacuate'].vm_states,
            [states.REBUILDING, states.REBUILD_SPAWNING],
            {
                'vm_state': states.ERROR,
                'task_state': None,
                'fault': {
                    'message': reason[:255],
                    'details': reason,
                    'code': 400
                    if isinstance(exc, exception.NoValidHost)
                    else 500,
                },
            },
        )
        if event:
            self._event(cell, uuid, request_id, EVACUATE_EVENT, error=reason)
