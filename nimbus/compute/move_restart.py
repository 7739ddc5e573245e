"""What a compute host settles of the moves it was in the middle of when
it died (issue 24, section 3; builds are :mod:`nimbus.compute.restart`).

The cell conductor lists the cold moves (resize, cold migrate) in progress
with this host as source or destination (``moves_of_host``); at start:

- destination, migration ``post-migrating`` and task ``resize_finish``:
  the finish was taken (the task is set when it starts) and cut short.
  It is done again: the guest spawned with the new flavor (unless it was
  spawned before the crash), then the same final step as a finish, so the
  server reaches VERIFY_RESIZE with the migration ``finished``;
- source, migration ``migrating``: the source died while letting the
  guest go. The move is undone: the guest powered on again (unless the
  server was stopped), the source's allocation handed back to the
  instance (its destination claim replaced in the same transaction), the
  migration ``error``, the server ACTIVE (or SHUTOFF) on its source with
  a fault saying why;
- source, migration ``confirming``: the confirm is done again (each of
  its parts is idempotent);
- destination, migration ``reverting`` with the server still here: the
  revert is done again (the new guest destroyed, the source told to
  finish it; a copy of that message delivered twice changes nothing).

And the unshelve of an offloaded server to this host (task ``spawning``
here): a guest that exists was spawned before the crash, the server is
ACTIVE; otherwise it goes back to SHELVED_OFFLOADED on no host with a
fault, and its claim here is freed (the user unshelves again).

:func:`moving_here` also gives :func:`nimbus.compute.restart.destroy_orphans`
the guests it must keep: a source keeps the old guest of a move until its
confirm, although the instance's host is already the destination.

Every change is a compare-and-swap of the cell conductor, so a message of
the move delivered after the restart, or a conductor's own recovery,
racing this one changes nothing twice.
"""

import dataclasses

from oslo_log import log as logging

from nimbus.common import instance_states as states
from nimbus.compute import resize
from nimbus.compute import shelve

LOG = logging.getLogger(__name__)


def moving_here(runner, ctxt):
    """The uuids of the instances in a cold move through this host (as
    source or destination), or None when the cell conductor could not
    say (then no guest is taken for an orphan)."""
    try:
        moves = runner.conductor.moves_of_host(ctxt, runner.host)
    except Exception as exc:  # noqa: BLE001 - unknown: destroy nothing
        LOG.warning(
            'Could not read the moves through %s: %s', runner.host, exc
        )
        return None
    return {migration.instance_uuid for _i, migration in moves}


def recover(resizes, runner, ctxt, instances):
    """After a restart: settle the moves this host was in the middle of.
    ``instances``: the live instances on this host (from the builds'
    recovery). Returns the uuids of the instances it settled."""
    settled = []
    for instance in instances:
        if (
            instance.vm_state == states.SHELVED_OFFLOADED
            and instance.task_state == states.SPAWNING
        ):
            if _unshelve_interrupted(runner, ctxt, instance):
                settled.append(instance.uuid)
    if resizes is None:
        return settled
    try:
        moves = runner.conductor.moves_of_host(ctxt, runner.host)
    except Exception:
        LOG.exception('Could not read the moves through %s', runner.host)
        return settled
    for instance, migration in moves:
        if instance is None:
            continue
        try:
            if _settle(resizes, ctxt, instance, migration):
                settled.append(instance.uuid)
        except resize.StepLost as exc:
            LOG.info('Move of %s left as it is: %s', instance.uuid, exc)
        except Exception:
            LOG.exception(
                'Could not settle the move of %s (migration %s)',
                instance.uuid,
                migration.uuid,
            )
    return settled


def _settle(resizes, ctxt, instance, migration):
    host = resizes.host
    if migration.cross_cell_move:
        # The super conductor drives a cross-cell move and records its
        # states (nimbus.conductor.cross_cell_resize): nothing to settle
        # here; its guests are still not taken for orphans.
        return False
    status, task = migration.status, instance.task_state
    request_id = (migration.details or {}).get('request_id')
    if (
        migration.dest_compute == host
        and status == 'post-migrating'
        and task == states.RESIZE_FINISH
    ):
        _finish_again(resizes, ctxt, instance, migration)
        return True
    if migration.source_compute == host and status == 'migrating':
        _back_on_source(resizes, ctxt, migration)
        return True
    if migration.source_compute == host and status == 'confirming':
        LOG.warning(
            'Instance %s: its confirm was cut short by a restart of %s; '
            'confirming again',
            instance.uuid,
            host,
        )
        resizes.confirm_resize(ctxt, request_id, migration)
        return True
    if (
        migration.dest_compute == host
        and status == 'reverting'
        and instance.host == host
        and task == states.RESIZE_REVERTING
        and migration.source_compute != host
    ):
        LOG.warning(
            'Instance %s: its revert was cut short by a restart of %s; '
            'reverting again',
            instance.uuid,
            host,
        )
        resizes.revert_resize(ctxt, request_id, migration)
        return True
    return False


def _finish_again(resizes, ctxt, instance, migration):
    uuid = instance.uuid
    LOG.warning(
        'Instance %s: the finish of its move to %s was cut short by a '
        'restart; finishing it again',
        uuid,
        resizes.host,
    )
    if uuid not in set(resizes.driver.list_instances()):
        resizes.driver.spawn(
            dataclasses.replace(instance, flavor=migration.new_flavor),
            {},
            power_on=not resizes._was_stopped(migration),
        )
    resizes.finish_spawned(ctxt, migration)


def _back_on_source(resizes, ctxt, migration):
    uuid = migration.instance_uuid
    reason = (
        'The move was interrupted: nimbus-compute on %s (its source) '
        'restarted while letting the guest go' % resizes.host
    )
    LOG.warning('Instance %s: %s; undoing the move', uuid, reason)
    stopped = resizes._was_stopped(migration)
    if not stopped and uuid in set(resizes.driver.list_instances()):
        resizes.driver.power_on(uuid)
    # Deliberately like resize_end's revert: the same undo, but the move
    # ends in error (not reverted) and the vm_state is left as it was.
    resizes._undo(ctxt, uuid, migration.uuid)
    resizes._step(
        ctxt,
        migration,
        ['migrating'],
        'error',
        resize._MOVING,
        [states.RESIZE_MIGRATING],
        {
            'task_state': None,
            'power_state': states.SHUTDOWN if stopped else states.RUNNING,
            'fault': {'message': reason[:255], 'code': 500},
        },
    )


def _unshelve_interrupted(runner, ctxt, instance):
    uuid = instance.uuid
    if uuid in set(runner.driver.list_instances()):
        LOG.info(
            'Instance %s was unshelved on %s before the restart; it is ACTIVE',
            uuid,
            runner.host,
        )
        return (
            runner.conductor.instance_update(
                ctxt,
                uuid,
                [states.SHELVED_OFFLOADED],
                {
                    'vm_state': states.ACTIVE,
                    'task_state': None,
                    'power_state': states.RUNNING,
                },
                expected_host=runner.host,
                expected_task_states=[states.SPAWNING],
            )
            is not None
        )
    reason = (
        'Unshelve interrupted: nimbus-compute on %s restarted while the '
        'server was spawning' % runner.host
    )
    done = shelve.offload_again(
        runner.conductor,
        ctxt,
        uuid,
        {'message': reason[:255], 'code': 500},
        [states.SPAWNING],
        runner.host,
    )
    if done is None:
        return False
    LOG.warning('%s: %s; it is offloaded again', uuid, reason)
    runner.placement.remove_allocations(ctxt, uuid)
    return True
