"""The compute's part of the moves that leave or change a host: shelve,
shelve offload, unshelve and the evacuation's rebuild (issue 24,
section 2; the conductor's part is :mod:`nimbus.conductor.shelve`).

- shelve: the compute API took ``shelving`` and made the snapshot image
  (``<name>-shelved``); here the task steps ``shelving_image_pending_
  upload`` -> ``shelving_image_uploading``, the driver snapshots and
  powers the guest off, and the instance ends SHELVED (power 4). With
  ``[DEFAULT] shelved_offload_time`` 0 the last swap takes
  ``shelving_offloading`` and the offload follows at once.
- offload: the guest is destroyed, its ARQs and its allocation in
  placement are released, and the instance ends SHELVED_OFFLOADED with
  no host or node.
- unshelve (a call of the super conductor, which waits for the answer to
  delete the shelved image): a SHELVED guest is powered on where it is;
  an offloaded one is spawned here from the shelved image on the
  allocation the conductor's scheduling claimed (task ``spawning``).
- evacuate (a call too): the instance moves to this host in one swap
  expecting the source (task ``rebuild_spawning``), the guest is spawned
  here, and it ends ACTIVE (or STOPPED).

Every swap goes through the cell conductor and expects the task the step
before set (and the host), as the server actions do
(:mod:`nimbus.compute.guest_actions`).
"""

import dataclasses
import traceback

from oslo_log import log as logging
from oslo_utils import uuidutils

from nimbus.common import instance_states as states
from nimbus.compute import action_events
from nimbus.compute import arq_wait

LOG = logging.getLogger(__name__)

SHELVE_EVENT = 'compute_shelve_instance'
OFFLOAD_EVENT = 'compute_shelve_offload_instance'
UNSHELVE_EVENT = 'compute_unshelve_instance'
EVACUATE_EVENT = 'compute_rebuild_instance'

_SHELVE_STEPS = (
    states.SHELVING_IMAGE_PENDING_UPLOAD,
    states.SHELVING_IMAGE_UPLOADING,
)


class Changed(Exception):
    """A swap found the instance no longer as the move left it."""


def _fault(exc):
    return {
        'message': str(exc)[:255] or type(exc).__name__,
        'details': ''.join(traceback.format_exception(exc)),
        'code': 500,
    }


def offload_again(conductor, ctxt, uuid, fault, tasks, host=None):
    """An unshelve undone: the instance back to SHELVED_OFFLOADED, off any
    host, with ``fault``, if its task is still one of ``tasks`` (and its
    host ``host`` when given). The updated instance, or None."""
    return conductor.instance_update(
        ctxt,
        uuid,
        [states.SHELVED_OFFLOADED],
        {
            'task_state': None,
            'host': None,
            'node': None,
            'compute_node_uuid': None,
            'fault': fault,
        },
        expected_host=host,
        expected_task_states=tasks,
    )


class ShelveMoves:
    """``actions``: the host's
    :class:`~nimbus.compute.guest_actions.GuestActions` (its event
    reporter is shared); ``runner``: the host's BuildRunner (driver,
    placement, cell conductor, accelerator client, events)."""

    def __init__(self, runner, actions):
        self.runner = runner
        self.actions = actions
        self.host = runner.host

    @property
    def driver(self):
        return self.runner.driver

    @property
    def conductor(self):
        return self.runner.conductor

    def _event(self, ctxt, uuid, request_id, event, phase, **more):
        self.actions._event(ctxt, uuid, request_id, event, phase, **more)

    def _finish(self, ctxt, uuid, request_id, event, exc=None):
        if exc is None:
            self._event(
                ctxt, uuid, request_id, event, 'finish', result='Success'
            )
            return
        self._event(
            ctxt,
            uuid,
            request_id,
            event,
            'finish',
            result='Error',
            **action_events.error_fields(exc),
        )

    def _failed(self, ctxt, uuid, request_id, event, vm_states, task, exc):
        """A failed step: its fault recorded and task cleared (unless the
        instance changed meanwhile), its event finished with the error."""
        try:
            self._swap(
                ctxt,
                uuid,
                vm_states,
                task,
                {'task_state': None, 'fault': _fault(exc)},
                self.host,
            )
        except Changed:
            pass
        self._finish(ctxt, uuid, request_id, event, exc)

    def _swap(self, ctxt, uuid, vm_states, task, updates, host=None):
        done = self.conductor.instance_update(
            ctxt,
            uuid,
            list(vm_states),
            updates,
            expected_host=host,
            expected_task_states=[task],
        )
        if done is None:
            raise Changed(
                'instance %s is no longer %s (deleted, reset or moved '
                'meanwhile)' % (uuid, task)
            )
        return done

    # -- shelve ------------------------------------------------------------

    def shelve(self, ctxt, uuid, request_id, image_id, offload):
        action = states.ACTIONS['shelve']
        self._event(ctxt, uuid, request_id, SHELVE_EVENT, 'start')
        task = action.task
        try:
            for step in _SHELVE_STEPS:
                self._swap(
                    ctxt,
                    uuid,
                    action.vm_states,
                    task,
                    {'task_state': step},
                    self.host,
                )
                task = step
        except Changed as exc:
            self._finish(ctxt, uuid, request_id, SHELVE_EVENT, exc)
            return
        try:
            self.driver.snapshot(uuid, image_id)
            self.driver.power_off(uuid)
        except Exception as exc:  # noqa: BLE001 - a driver's failure is the shelve's
            LOG.warning('Shelve of %s failed on %s: %s', uuid, self.host, exc)
            self._failed(
                ctxt,
                uuid,
                request_id,
                SHELVE_EVENT,
                action.vm_states,
                task,
                exc,
            )
            return
        try:
            self._swap(
                ctxt,
                uuid,
                action.vm_states,
                task,
                {
                    'vm_state': states.SHELVED,
                    'task_state': (
                        states.SHELVING_OFFLOADING if offload else None
                    ),
                    'power_state': states.SHUTDOWN,
                },
                self.host,
            )
        except Changed as exc:
            self._finish(ctxt, uuid, request_id, SHELVE_EVENT, exc)
            return
        LOG.info('Instance %s is SHELVED on %s', uuid, self.host)
        self._finish(ctxt, uuid, request_id, SHELVE_EVENT)
        if offload:
            self.offload(ctxt, uuid, request_id)

    def offload(self, ctxt, uuid, request_id):
        """The instance is SHELVED here with task ``shelving_offloading``:
        destroy the guest, release its ARQs and its allocation, and clear
        its host."""
        self._event(ctxt, uuid, request_id, OFFLOAD_EVENT, 'start')
        try:
            self.driver.destroy(uuid)
            if self.runner.accelerator is not None:
                try:
                    self.runner.accelerator.delete_arqs_for_instance(
                        ctxt, uuid
                    )
                except Exception:
                    LOG.exception('Could not delete the ARQs of %s', uuid)
            self.runner.placement.remove_allocations(ctxt, uuid)
        except Exception as exc:  # noqa: BLE001 - a driver's failure is the offload's
            LOG.warning('Offload of %s failed: %s', uuid, exc)
            # Deliberately like the shelve's failure: one _failed call each,
            # with the offload's own event, states and task.
            self._failed(
                ctxt,
                uuid,
                request_id,
                OFFLOAD_EVENT,
                [states.SHELVED],
                states.SHELVING_OFFLOADING,
                exc,
            )
            return
        try:
            self._swap(
                ctxt,
                uuid,
                [states.SHELVED],
                states.SHELVING_OFFLOADING,
                {
                    'vm_state': states.SHELVED_OFFLOADED,
                    'task_state': None,
                    'power_state': states.SHUTDOWN,
                    'host': None,
                    'node': None,
                    'compute_node_uuid': None,
                    'accel_uuids': [],
                },
                self.host,
            )
        except Changed as exc:
            self._finish(ctxt, uuid, request_id, OFFLOAD_EVENT, exc)
            return
        LOG.info('Instance %s offloaded from %s', uuid, self.host)
        self._finish(ctxt, uuid, request_id, OFFLOAD_EVENT)

    def offload_expired(self, ctxt, seconds):
        """The periodic of ``[DEFAULT] shelved_offload_time``: offload the
        instances of this host SHELVED longer than ``seconds``."""
        done = []
        for uuid in self.conductor.shelved_offloadable(
            ctxt, self.host, seconds
        ):
            try:
                self._swap(
                    ctxt,
                    uuid,
                    [states.SHELVED],
                    None,
                    {'task_state': states.SHELVING_OFFLOADING},
                    self.host,
                )
            except Changed:
                continue
            LOG.info(
                'Instance %s shelved longer than %d s: offloading it',
                uuid,
                seconds,
            )
            self.offload(ctxt, uuid, uuidutils.generate_uuid())
            done.append(uuid)
        return done

    # -- unshelve ----------------------------------------------------------

    def unshelve(self, ctxt, uuid, request_id, image_id, selection, accel):
        """Returns ``{'ok': bool, 'error': str|None}``; the conductor
        deletes the shelved image on success and frees the claim on
        failure."""
        self._event(ctxt, uuid, request_id, UNSHELVE_EVENT, 'start')
        try:
            if selection is None:
                self.driver.power_on(uuid)
                self._swap(
                    ctxt,
                    uuid,
                    [states.SHELVED],
                    states.UNSHELVING,
                    {
                        'vm_state': states.ACTIVE,
                        'task_state': None,
                        'power_state': states.RUNNING,
                    },
                    self.host,
                )
            else:
                self._spawn_offloaded(ctxt, uuid, image_id, selection, accel)
        except Exception as exc:  # noqa: BLE001 - a driver's failure is the unshelve's
            LOG.warning(
                'Unshelve of %s failed on %s: %s', uuid, self.host, exc
            )
            if selection is not None and not isinstance(exc, Changed):
                self._undo_spawn(ctxt, uuid, exc)
            self._finish(ctxt, uuid, request_id, UNSHELVE_EVENT, exc)
            return {'ok': False, 'error': str(exc)}
        LOG.info('Instance %s unshelved on %s', uuid, self.host)
        self._finish(ctxt, uuid, request_id, UNSHELVE_EVENT)
        return {'ok': True, 'error': None}

    def _spawn_offloaded(self, ctxt, uuid, image_id, selection, accel):
        current = self._swap(
            ctxt,
            uuid,
            [states.SHELVED_OFFLOADED],
            states.UNSHELVING,
            {
                'task_state': states.SPAWNING,
                'host': self.host,
                'node': selection.nodename or self.host,
                'compute_node_uuid': selection.compute_node_uuid,
            },
        )
        accel_info = arq_wait.wait_bound(
            self.runner.conf,
            self.runner.accelerator,
            self.runner.events,
            ctxt,
            uuid,
            accel or [],
        )
        guest = current
        if image_id:
            guest = dataclasses.replace(current, image_ref=image_id)
        self.driver.spawn(guest, selection.allocations, accel_info)
        self._swap(
            ctxt,
            uuid,
            [states.SHELVED_OFFLOADED],
            states.SPAWNING,
            {
                'vm_state': states.ACTIVE,
                'task_state': None,
                'power_state': states.RUNNING,
            },
            self.host,
        )

    def _undo_spawn(self, ctxt, uuid, exc):
        try:
            self.driver.destroy(uuid)
        except Exception:
            LOG.exception('Could not destroy the guest of %s', uuid)
        offload_again(
            self.conductor,
            ctxt,
            uuid,
            _fault(exc),
            [states.UNSHELVING, states.SPAWNING],
        )

    # -- evacuate ------------------------------------------------------------

    def evacuate(
        self, ctxt, uuid, request_id, migration, selection, power_on, accel=()
    ):
        """Rebuild the instance here, away from its (down) source; returns
        ``{'ok': bool, 'error': str|None}``: the conductor ends the
        migration and, on failure, gives the source its allocation
        back."""
        action = states.ACTIONS['evacuate']
        self._event(ctxt, uuid, request_id, EVACUATE_EVENT, 'start')
        spawned = False
        try:
            current = self._swap(
                ctxt,
                uuid,
                action.vm_states,
                states.REBUILDING,
                {
                    'task_state': states.REBUILD_SPAWNING,
                    'host': self.host,
                    'node': selection.nodename or self.host,
                    'compute_node_uuid': selection.compute_node_uuid,
                },
                migration.source_compute,
            )
            accel_info = arq_wait.wait_bound(
                self.runner.conf,
                self.runner.accelerator,
                self.runner.events,
                ctxt,
                uuid,
                list(accel or []),
            )
            self.driver.spawn(current, selection.allocations, accel_info)
            spawned = True
            if not power_on:
                self.driver.power_off(uuid)
            self._swap(
                ctxt,
                uuid,
                action.vm_states,
                states.REBUILD_SPAWNING,
                {
                    'vm_state': states.ACTIVE if power_on else states.STOPPED,
                    'task_state': None,
                    'power_state': (
                        states.RUNNING if power_on else states.SHUTDOWN
                    ),
                },
                self.host,
            )
        except Exception as exc:  # noqa: BLE001 - a driver's failure is the evacuation's
            LOG.warning(
                'Evacuation of %s to %s failed: %s', uuid, self.host, exc
            )
            if spawned:
                try:
                    self.driver.destroy(uuid)
                except Exception:
                    LOG.exception('Could not destroy the guest of %s', uuid)
            if not isinstance(exc, Changed):
                self.conductor.instance_update(
                    ctxt,
                    uuid,
                    list(action.vm_states),
                    {
                        'vm_state': states.ERROR,
                        'task_state': None,
                        'host': migration.source_compute,
                        'node': migration.source_node,
                        'fault': _fault(exc),
                    },
                    expected_task_states=[
                        states.REBUILDING,
                        states.REBUILD_SPAWNING,
                    ],
                )
            self._finish(ctxt, uuid, request_id, EVACUATE_EVENT, exc)
            return {'ok': False, 'error': str(exc)}
        LOG.info('Instance %s evacuated to %s', uuid, self.host)
        self._finish(ctxt, uuid, request_id, EVACUATE_EVENT)
        return {'ok': True, 'error': None}


def clean_evacuated(runner, ctxt):
    """At start: the evacuations away from this host that are ``done``
    (the instance runs elsewhere): destroy what is left of their guests
    here, drop the migration's allocation (the source's) and mark them
    ``completed``. Returns the migration uuids completed."""
    try:
        migrations = runner.conductor.evacuations_done(ctxt, runner.host)
    except Exception:
        LOG.exception('Could not read the evacuations from %s', runner.host)
        return []
    guests = set(runner.driver.list_instances())
    completed = []
    for migration in migrations:
        uuid = migration.instance_uuid
        if uuid in guests:
            LOG.info(
                'Destroying the guest of %s: it was evacuated from %s',
                uuid,
                runner.host,
            )
            runner.driver.destroy(uuid)
        try:
            runner.placement.remove_allocations(ctxt, migration.uuid)
        except Exception:
            LOG.exception(
                'Could not free the source allocation of evacuation %s',
                migration.uuid,
            )
            continue
        if runner.conductor.migration_set_status(
            ctxt, migration.uuid, 'completed', ['done']
        ):
            completed.append(migration.uuid)
    return completed
