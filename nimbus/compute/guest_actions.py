"""Server actions that stay on this host: stop, start, reboot, pause,
unpause, suspend, resume, rescue, unrescue, rebuild, changePassword, and
the soft delete and restore of ``[DEFAULT] reclaim_instance_interval``.

The compute API has already taken the action's task with a
compare-and-swap (``powering-off``, ``rebooting``, ...) and started its
instance action. Here, for one action: start its event
(``compute_stop_instance``...), step the task through Nova's intermediate
task states (``reboot_started``, ``rebuild_spawning``), have the virt
driver move the guest, and end with one compare-and-swap to the action's
final vm_state (:data:`nimbus.common.instance_states.ACTIONS`), the task
cleared and the guest's power state, through the cell conductor (computes
hold no database credentials). Each swap expects this host and the task
the step before set: an instance deleted, reset or moved meanwhile is left
as it is, and the event says so.

A failure of the driver ends the event in ``Error`` with a fault on the
instance; as in Nova, a failed reboot, rebuild or rescue leaves the
instance in ERROR, any other failed action clears its task and keeps its
state.
"""

import traceback

from oslo_log import log as logging

from nimbus.common import instance_states as states
from nimbus.compute import action_events

LOG = logging.getLogger(__name__)

# action -> Nova's event name.
EVENTS = {
    'stop': 'compute_stop_instance',
    'start': 'compute_start_instance',
    'reboot': 'compute_reboot_instance',
    'reboot_hard': 'compute_reboot_instance',
    'pause': 'compute_pause_instance',
    'unpause': 'compute_unpause_instance',
    'suspend': 'compute_suspend_instance',
    'resume': 'compute_resume_instance',
    'rescue': 'compute_rescue_instance',
    'unrescue': 'compute_unrescue_instance',
    'rebuild': 'compute_rebuild_instance',
    'changePassword': 'compute_set_admin_password',
    'soft_delete': 'compute_soft_delete_instance',
    'createImage': 'compute_snapshot_instance',
    'createBackup': 'compute_backup_instance',
    'restore': 'compute_restore_instance',
}

# action -> the tasks the compute steps through after the API's.
STEPS = {
    'reboot': (states.REBOOT_STARTED,),
    'reboot_hard': (states.REBOOT_STARTED_HARD,),
    'rebuild': (states.REBUILD_SPAWNING,),
    'createImage': (states.IMAGE_PENDING_UPLOAD, states.IMAGE_UPLOADING),
    'createBackup': (states.IMAGE_PENDING_UPLOAD, states.IMAGE_UPLOADING),
}

# Actions whose failure leaves the instance in ERROR (Nova's).
_FAIL_TO_ERROR = ('reboot', 'reboot_hard', 'rebuild', 'rescue')


class InstanceChanged(Exception):
    """A swap found the instance no longer as the action left it."""


class GuestActions:
    def __init__(self, host, driver, conductor, journal=None):
        """``journal``: an
        :class:`~nimbus.compute.action_journal.ActionJournal` (None: the
        actions under way are not kept across a restart)."""
        self.host = host
        self.driver = driver
        self.conductor = conductor
        self.journal = journal

    # -- the driver's part of each action ------------------------------------

    def _drive(self, name, instance_uuid, options):
        driver = self.driver
        if name in ('stop', 'soft_delete'):
            driver.power_off(instance_uuid)
        elif name in ('start', 'restore'):
            driver.power_on(instance_uuid)
        elif name in ('reboot', 'reboot_hard'):
            driver.reboot(
                instance_uuid, 'HARD' if name == 'reboot_hard' else 'SOFT'
            )
        elif name in ('pause', 'unpause', 'suspend', 'resume', 'unrescue'):
            getattr(driver, name)(instance_uuid)
        elif name == 'rescue':
            driver.rescue(instance_uuid, options.get('rescue_image_ref'))
        elif name == 'rebuild':
            driver.rebuild(
                instance_uuid,
                options['image_ref'],
                bool(options.get('preserve_ephemeral')),
                options.get('power_on', True),
            )
        elif name in ('createImage', 'createBackup'):
            driver.snapshot(instance_uuid, options['image_id'])
        elif name == 'changePassword':
            driver.set_admin_password(instance_uuid, options['admin_password'])
        else:
            raise ValueError('unknown server action %r' % name)

    # -- the action ----------------------------------------------------------

    def run(
        self,
        ctxt,
        name,
        instance_uuid,
        request_id,
        options=None,
        resume_at=None,
    ):
        """Carry out action ``name`` on the instance for ``request_id``;
        never raises for a failure of the action itself (the event and
        the instance say how it went). ``resume_at``: the task the
        instance was left in (an action finished after a restart)."""
        if self.journal is not None:
            self.journal.taken(instance_uuid, name, request_id, options)
        try:
            self._run(
                ctxt, name, instance_uuid, request_id, options or {}, resume_at
            )
        finally:
            if self.journal is not None:
                self.journal.settled(instance_uuid)

    def _run(self, ctxt, name, instance_uuid, request_id, options, resume_at):
        action = states.ACTIONS[name]
        event = EVENTS[name]
        self._event(ctxt, instance_uuid, request_id, event, 'start')
        task = resume_at or action.task
        steps = STEPS.get(name, ())
        if task in steps:
            steps = steps[steps.index(task) + 1 :]
        try:
            for step in steps:
                self._swap(
                    ctxt, instance_uuid, action, task, {'task_state': step}
                )
                task = step
        except InstanceChanged as exc:
            self._changed(ctxt, instance_uuid, request_id, event, exc)
            return
        try:
            self._drive(name, instance_uuid, options)
        except Exception as exc:  # noqa: BLE001 - a driver's failure is the action's
            self._failed(ctxt, name, instance_uuid, request_id, task, exc)
            return
        final = self._final(name, action, options)
        try:
            self._swap(ctxt, instance_uuid, action, task, final)
        except InstanceChanged as exc:
            self._changed(ctxt, instance_uuid, request_id, event, exc)
            return
        LOG.info(
            '%s of %s done on %s (%s)',
            name,
            instance_uuid,
            self.host,
            final.get('vm_state', 'state kept'),
        )
        self._event(
            ctxt,
            instance_uuid,
            request_id,
            event,
            'finish',
            result='Success',
            last=True,
        )

    def _final(self, name, action, options):
        updates = {'task_state': None}
        if name == 'rebuild' and not options.get('power_on', True):
            # A stopped server is rebuilt and stays stopped.
            updates.update(
                vm_state=states.STOPPED, power_state=states.SHUTDOWN
            )
        elif action.final is not None:
            updates['vm_state'] = action.final
        if action.power is not None and 'power_state' not in updates:
            updates['power_state'] = action.power
        return updates

    def _swap(self, ctxt, instance_uuid, action, task, updates):
        done = self.conductor.instance_update(
            ctxt,
            instance_uuid,
            list(action.vm_states),
            updates,
            expected_host=self.host,
            expected_task_states=[task],
        )
        if done is None:
            raise InstanceChanged(
                'instance %s is no longer %s on %s (deleted, reset or moved '
                'meanwhile)' % (instance_uuid, task, self.host)
            )
        return done

    def _failed(self, ctxt, name, instance_uuid, request_id, task, exc):
        LOG.warning(
            '%s of %s failed on %s: %s', name, instance_uuid, self.host, exc
        )
        action = states.ACTIONS[name]
        fault = {
            'message': str(exc)[:255] or type(exc).__name__,
            'details': ''.join(traceback.format_exception(exc)),
            'code': 500,
        }
        updates = {'task_state': None, 'fault': fault}
        if name in _FAIL_TO_ERROR:
            updates['vm_state'] = states.ERROR
        updates['power_state'] = self._power_state(instance_uuid)
        try:
            self._swap(ctxt, instance_uuid, action, task, updates)
        except InstanceChanged:
            LOG.info('%s changed while its %s failed', instance_uuid, name)
        self._event(
            ctxt,
            instance_uuid,
            request_id,
            EVENTS[name],
            'finish',
            result='Error',
            traceback=fault['details'],
            details=fault['message'],
            last=True,
        )

    def _power_state(self, instance_uuid):
        try:
            return self.driver.power_state(instance_uuid)
        except Exception:  # noqa: BLE001 - a driver that cannot tell: NOSTATE
            return states.NOSTATE

    def _changed(self, ctxt, instance_uuid, request_id, event, exc):
        LOG.info('Left %s as it is: %s', instance_uuid, exc)
        # Deliberately like the success and failure finishes: each its own
        # result and fields, the instance left as it is.
        self._event(
            ctxt,
            instance_uuid,
            request_id,
            event,
            'finish',
            result='Error',
            traceback=str(exc),
            details=str(exc),
            last=True,
        )

    def _event(self, ctxt, instance_uuid, request_id, event, phase, **more):
        """Report a step; a lost report is logged, never fails the
        action."""
        action_events.record(
            self.conductor,
            self.host,
            ctxt,
            instance_uuid,
            request_id,
            event,
            phase,
            **more,
        )

    # -- after a restart -------------------------------------------------------

    def recover(self, ctxt, instances):
        """Finish the actions this host had taken when it stopped
        (``instances``: the cell's live instances on this host, Instance
        records). An action whose instance is still in one of its tasks
        is carried out from there (the driver's part again: each is
        idempotent on the fake driver's guest, but a soft reboot, pause or
        suspend of a guest already moved, which then fails as any failed
        action); a password change cannot be (its password was never
        written) and ends in error with its task cleared. The others
        (deleted, reset, moved meanwhile) are dropped."""
        if self.journal is None:
            return
        by_uuid = {i.uuid: i for i in instances}
        for uuid, entry in self.journal.entries().items():
            name = entry.get('name')
            instance = by_uuid.get(uuid)
            action = states.ACTIONS.get(name)
            tasks = (
                ()
                if action is None
                else (action.task,) + tuple(STEPS.get(name, ()))
            )
            if instance is None or instance.task_state not in tasks:
                self.journal.settled(uuid)
                continue
            if name == 'changePassword':
                self._failed(
                    ctxt,
                    name,
                    uuid,
                    entry['request_id'],
                    instance.task_state,
                    RuntimeError(
                        'the password change was interrupted by a restart '
                        'of %s' % self.host
                    ),
                )
                self.journal.settled(uuid)
                continue
            LOG.info(
                'Finishing the %s of %s after a restart (task %s)',
                name,
                uuid,
                instance.task_state,
            )
            self.run(
                ctxt,
                name,
                uuid,
                entry['request_id'],
                entry.get('options') or {},
                resume_at=instance.task_state,
            )

    # -- what the compute API asks and waits for -----------------------------

    def console_output(self, instance_uuid, length=None):
        text = self.driver.get_console_output(instance_uuid)
        if length is None:
            return text
        # Nova's tail: the last ``length`` pieces between newlines, so a
        # log ending with a newline gives its last length - 1 lines.
        pieces = text.split('\n')
        return '\n'.join(pieces[-length:]) if length > 0 else ''

    def diagnostics(self, instance_uuid):
        return self.driver.get_diagnostics(instance_uuid)
