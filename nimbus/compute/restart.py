"""What a compute host settles when it starts again after a crash.

A build in the cell's database on this host is in one of three places when
the process dies: spawned (its guest exists), taken from the queue and not
finished (its message was acknowledged, so it is gone from the broker; the
host's :class:`~nimbus.compute.journal.BuildJournal` lists it), or still in
the host's queue (durable queues keep it across the restart). Only the
second kind is handed back; the queued ones build when their message
arrives.
"""

from oslo_log import log as logging
from oslo_utils import timeutils

from nimbus.common import context as nimbus_context
from nimbus.common import instance_states as states
from nimbus.common.objects import request_spec as spec_obj
from nimbus.common.objects import selection as selection_obj
from nimbus.compute import move_restart

LOG = logging.getLogger(__name__)


def spawned_values():
    """The instance's fields once its guest is spawned: ACTIVE and running.

    One place for a build's success, whether the spawn finished normally
    (build.BuildRunner) or before a restart (recover below).
    """
    return {
        'vm_state': states.ACTIVE,
        'task_state': None,
        'power_state': 1,
        'launched_at': timeutils.utcnow().isoformat(),
    }


def recover(runner, ctxt):
    """After a restart: settle builds that were interrupted.

    A building instance whose guest exists finished spawning just
    before the crash: it becomes ACTIVE. One without a guest whose
    message this host had taken (it is in the journal) was interrupted:
    its claim here is given back and the cell conductor takes it to
    its next alternate (or fails it with a fault when none is left).
    One this host never took is still in its queue (durable queues
    keep a cast across the restart): it is left to build. Guests of
    instances that were deleted meanwhile are destroyed.
    """
    instances = runner.conductor.instances_on_host(ctxt, runner.host)
    guests = set(runner.driver.list_instances())
    taken = runner.journal.uuids()
    unsettled = set()  # taken builds that could not be handed back
    for instance in instances:
        uuid = instance.uuid
        if instance.vm_state == states.DELETED:
            continue
        if instance.task_state == states.DELETING:
            LOG.info('Finishing the delete of %s', uuid)
            runner.terminate(ctxt, uuid)
            continue
        if instance.vm_state != states.BUILDING:
            continue
        if uuid in guests:
            LOG.info(
                'Instance %s was spawned on %s before the restart; '
                'it is ACTIVE',
                uuid,
                runner.host,
            )
            runner.conductor.instance_update(
                ctxt,
                uuid,
                [states.BUILDING],
                spawned_values(),
                expected_host=runner.host,
            )
            continue
        entry = runner.journal.get(uuid)
        if entry is not None:
            if not _resume_interrupted(runner, ctxt, instance, entry):
                unsettled.add(uuid)
        elif instance.task_state == states.SPAWNING:
            # Spawning, yet not in the journal (lost with the disk):
            # its message was taken, nothing can redo it here.
            _fail_interrupted(runner, ctxt, instance)
        else:
            LOG.info(
                'Instance %s: its build is still queued for %s; '
                'leaving it to build',
                uuid,
                runner.host,
            )
    for uuid in taken - unsettled:
        # Settled above, or deleted or moved away while this host was down.
        runner.journal.settled(uuid)
    destroy_orphans(runner, instances, guests)
    return instances


def _resume_interrupted(runner, ctxt, instance, entry):
    """A build this host had taken and not finished when it died:
    handed back like a build a stopping compute did not start (its
    claim here is freed, the cell conductor claims the next alternate
    or fails it with a fault naming every attempt). False when the cell
    conductor could not be told."""
    uuid = instance.uuid
    reason = (
        'Build interrupted: nimbus-compute on %s restarted while '
        'the instance was building' % runner.host
    )
    LOG.warning(
        'Instance %s: %s; handing it to its %d remaining alternate(s)',
        uuid,
        reason,
        len(entry.get('host_list') or []),
    )
    try:
        # The journal holds the message's primitives, as they came.
        runner.give_back(
            ctxt,
            instance,
            spec_obj.RequestSpec.from_primitive(
                entry.get('request_spec') or {}
            ),
            selection_obj.list_from_primitive(entry.get('host_list') or []),
            reason,
            'interrupted',
            providers=_claimed_providers(entry),
        )
    except Exception:
        LOG.exception(
            'Could not hand %s back to the cell conductor; the build '
            'check settles it',
            uuid,
        )
        return False
    return True


def _fail_interrupted(runner, ctxt, instance):
    uuid = instance.uuid
    reason = (
        'Build interrupted: nimbus-compute on %s restarted '
        'while the instance was building' % runner.host
    )
    failed = runner.conductor.instance_update(
        ctxt,
        uuid,
        [states.BUILDING],
        {
            'vm_state': states.ERROR,
            'task_state': None,
            'fault': {
                'message': 'Build interrupted by a compute restart',
                'details': reason,
            },
        },
        expected_host=runner.host,
    )
    if failed is None:
        # The cell conductor's build check (or a delete) settled it
        # first; it freed the allocation too.
        return
    LOG.warning('%s: %s', uuid, reason)
    runner.placement.remove_allocations(ctxt, uuid)
    runner.conductor.record_build_attempt(
        ctxt, uuid, runner.host, instance.node, 'failed', reason
    )


def destroy_orphans(runner, instances, guests=None):
    """Destroy guests that no live instance on this host owns.

    ``instances`` is what the cell database places on this host (live
    Instance records). A guest outside it belongs to an instance deleted while
    this compute was down (the API deleted it locally and freed its
    allocation) or moved away: nothing may keep running for it (but a
    guest of a move in progress through this host,
    :func:`nimbus.compute.move_restart.moving_here`). Its
    allocation is not touched here: it was freed by whoever deleted or
    moved the instance. Returns the uuids destroyed.
    """
    if guests is None:
        guests = set(runner.driver.list_instances())
    if not guests:
        # No guest, no orphan: the moves through this host need no read.
        return []
    live = {i.uuid for i in instances if i.vm_state != states.DELETED}
    if set(guests) <= live:
        # Every guest has its live instance: no orphan whatever the moves
        # (they only add owners), so they are not read (a call to the
        # cell conductor per host and resource update, saved).
        return []
    # A move's source keeps its guest until the confirm, though the
    # instance is already on the destination; a destination has spawned
    # before the move's last step names it the host.
    moving = move_restart.moving_here(
        runner, nimbus_context.get_admin_context()
    )
    if moving is None:
        return []
    live |= moving
    orphans = sorted(set(guests) - live)
    for orphan in orphans:
        LOG.info(
            'Destroying guest %s: no live instance on %s owns it',
            orphan,
            runner.host,
        )
        try:
            runner.driver.destroy(orphan)
        except Exception:
            LOG.exception('Could not destroy the orphan guest %s', orphan)
    return orphans


def _claimed_providers(entry):
    """The providers the journalled build's selection claimed (None when
    the entry holds no readable selection: then every allocation of the
    consumer is freed, as before journals kept it)."""
    try:
        selection = selection_obj.Selection.from_primitive(entry['selection'])
    except (KeyError, TypeError, ValueError):  # MalformedPrimitive included
        return None
    return list(selection.allocations) or None
