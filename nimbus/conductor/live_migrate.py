"""The super conductor's part of a live migration (Nova's conductor
``live_migrate_instance`` and its LiveMigrationTask).

The compute API took the task (``migrating``), started the instance
action ``live-migration`` and made the migration (type
``live-migration``, status ``accepted``, the requested host as
``dest_host``) in one transaction. Here:

1. the request spec stored at create is reused (:mod:`.move_claims`):
   the source in ``ignore_hosts``, a chosen host as
   ``requested_destination`` (filtered, not forced, as Nova since 2.68;
   before it a ``force`` is taken the same way), asking for the
   flavor's device profile (:func:`.accelerators.swap_profile`) so the
   devices' allocation moves too;
2. :meth:`MoveClaims.schedule` hands the source's allocation to the
   migration's consumer and claims the destination for the instance;
   the migration records the destination and, with a device profile,
   the source's ARQs and the device providers of each request group
   there (the destination binds its ARQs from them,
   :mod:`nimbus.compute.move_arqs`);
3. the destination's ``check_can_live_migrate_destination`` (a call);
   when it refuses, the claim is undone and the scheduler asked again
   without that host, at most ``[DEFAULT] migrate_max_retries`` more
   times (-1: until no host is left), as Nova; a chosen host is not
   retried;
4. the source's ``live_migration`` is cast with what the destination
   resolved (the block migration of ``auto``).

A move the scheduler cannot place, or whose every destination refused,
ends here: the migration ``error``, the source's allocation back to the
instance, the task cleared with a fault (the server keeps running on its
source), the event ``conductor_live_migrate_instance`` in ``Error``.
"""

import functools
import traceback

from oslo_log import log as logging

from nimbus.common import exception
from nimbus.common import instance_states as states
from nimbus.common.objects import migration as migration_obj
from nimbus.conductor import accelerators
from nimbus.conductor import move_claims
from nimbus.conductor import resize
from nimbus.db import cell_instances as instances
from nimbus.db import cell_migrations
from nimbus.db import instance_actions

LOG = logging.getLogger(__name__)

EVENT = 'conductor_live_migrate_instance'
_LIVE = [states.ACTIVE, states.PAUSED]


class PreCheckFailed(exception.NimbusException):
    msg_fmt = 'Migration pre-check error: %(reason)s'


_event = functools.partial(resize.conductor_event, EVENT)


def _timeout(conductor):
    return max(int(getattr(conductor.conf, 'rpc_response_timeout', 60)), 60)


def live_migrate(
    conductor,
    ctxt,
    instance_uuid,
    cell_uuid,
    request_id,
    migration_uuid,
    block_migration=None,
    disk_over_commit=None,
    host=None,
):
    """One live migration (``conductor``: the SuperConductor)."""
    cell = conductor.cells.by_uuid(cell_uuid)
    with conductor.cells.db(cell).session() as session:
        row = instances.get(session, instance_uuid)
        migration = cell_migrations.get(session, migration_uuid)
        if (
            row is None
            or row.deleted
            or row.task_state != states.MIGRATING
            or migration is None
            or migration['status'] != 'accepted'
        ):
            LOG.info(
                'live_migrate: %s is no longer waiting for its move',
                instance_uuid,
            )
            return
        instance = instances.to_dict(row)
        _event(session, instance_uuid, request_id)
    try:
        selected, migrate_data = _place(
            conductor,
            ctxt,
            cell,
            instance,
            migration,
            request_id,
            block_migration,
            disk_over_commit,
            host,
        )
    except Exception as exc:  # noqa: BLE001 - any failure undoes the move
        fail(conductor, ctxt, cell, instance, migration, request_id, exc)
        return
    with conductor.cells.db(cell).session() as session:
        _event(session, instance_uuid, request_id, 'Success')
        migration = cell_migrations.get(session, migration_uuid)
    conductor.compute_api(cell).live_migration(
        ctxt,
        instance['host'],
        instance_uuid,
        request_id,
        migration_obj.Migration.from_row(migration),
        migrate_data,
    )
    spec = move_claims.stored_spec(conductor.api_db, instance_uuid)
    if spec is not None:
        resize._tell(conductor, ctxt, selected.service_host, instance, spec)


def _place(
    conductor,
    ctxt,
    cell,
    instance,
    migration,
    request_id,
    block_migration,
    disk_over_commit,
    host,
):
    """Schedule and check destinations until one takes the guest: its
    Selection and the migrate data it answered. Raises NoValidHost or
    PreCheckFailed (every claim undone)."""
    uuid = instance['uuid']
    stored = move_claims.stored_spec(conductor.api_db, uuid)
    if stored is None:
        raise exception.NoValidHost(
            reason='the request spec of the server is gone'
        )
    claims = move_claims.MoveClaims(conductor.scheduler, conductor.placement)
    compute = conductor.compute_api(cell)
    ignore = {instance['host']}
    retries = int(getattr(conductor.conf, 'migrate_max_retries', -1))
    failures = []
    while True:
        spec = move_claims.move_spec(
            stored,
            uuid,
            ignore_hosts=ignore,
            destination={'host': host} if host else None,
        )
        accelerators.swap_profile(
            conductor.accelerator, ctxt, spec, instance['flavor']
        )
        host_list = claims.schedule(
            ctxt, spec, uuid, migration['uuid'], return_alternates=False
        )
        host_list = [s for s in host_list if s.cell_uuid in (None, cell.uuid)]
        if not host_list:
            claims.undo(ctxt, uuid, migration['uuid'])
            raise exception.NoValidHost(
                reason="no host of the server's cell fits the live "
                'migration'
                + ('' if not failures else ' (%s)' % '; '.join(failures))
            )
        # Deliberately like resize's destination record: a live migration also
        # records both nodes' uuids in the migration's details.
        selected = host_list[0]
        with conductor.cells.db(cell).session() as session:
            cell_migrations.update(
                session,
                migration['uuid'],
                dest_compute=selected.service_host,
                dest_node=selected.nodename,
                dest_host=selected.service_host,
                details=dict(
                    migration.get('details') or {},
                    source_node_uuid=instance.get('compute_node_uuid'),
                    dest_node_uuid=selected.compute_node_uuid,
                    request_id=request_id,
                    **_arq_details(instance, spec, selected),
                ),
            )
            current = cell_migrations.get(session, migration['uuid'])
        try:
            answer = compute.check_can_live_migrate_destination(
                ctxt,
                selected.service_host,
                uuid,
                request_id,
                migration_obj.Migration.from_row(current),
                block_migration,
                disk_over_commit,
                timeout=_timeout(conductor),
            )
        except Exception as exc:  # noqa: BLE001 - a host that cannot answer refuses
            answer = {'ok': False, 'error': str(exc)}
        if (answer or {}).get('ok'):
            return selected, dict(answer.get('migrate_data') or {})
        reason = '%s: %s' % (
            selected.service_host,
            (answer or {}).get('error'),
        )
        LOG.info(
            'Live migration of %s: destination refused (%s)', uuid, reason
        )
        failures.append(reason)
        claims.undo(ctxt, uuid, migration['uuid'])
        ignore.add(selected.service_host)
        if host or (retries >= 0 and len(failures) > retries):
            raise PreCheckFailed(reason='; '.join(failures))


def _arq_details(instance, spec, selected):
    """What the destination needs to bind the server's device profile
    (:mod:`nimbus.compute.move_arqs`): the source's ARQs, and the device
    providers placement gave each request group on the destination."""
    if not spec.device_profile:
        return {}
    return {
        'source_accel_uuids': list(instance.get('accel_uuids') or []),
        'dest_device_mappings': dict(
            (selected.allocation_request or {}).get('mappings') or {}
        ),
    }


def fail(conductor, ctxt, cell, instance, migration, request_id, exc):
    """No destination: migration ``error``, task cleared with a fault
    (the server stays as it was on its source), the events in Error."""
    uuid = instance['uuid']
    reason = getattr(exc, 'message', None) or str(exc)
    LOG.info('The live migration of %s failed: %s', uuid, reason)
    details = ''.join(traceback.format_exception(exc))
    with conductor.cells.db(cell).session() as session:
        cell_migrations.set_status(
            session, migration['uuid'], 'error', expected=['accepted']
        )
        instances.transition(
            session,
            uuid,
            _LIVE,
            {
                'task_state': None,
                'fault': {
                    'message': reason[:255],
                    'details': details,
                    'code': 400
                    if isinstance(exc, (exception.NoValidHost, PreCheckFailed))
                    else 500,
                },
            },
            expected_task_states=[states.MIGRATING],
        )
        _event(session, uuid, request_id, 'Error', details, reason)
        instance_actions.finish(
            session, uuid, request_id, instance_actions.ERROR
        )
