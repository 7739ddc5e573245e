"""The super conductor's part of a resize and a cold migrate (Nova's
``migrate_server`` of the conductor's compute task API).

The compute API took the task (``resize_prep``) and started the instance
action; here, for one move:

1. the migration record is made in the instance's cell (type ``resize``,
   or ``migration`` for a cold migrate; status ``pre-migrating``; the old
   and new flavors; the source host and node);
2. the request spec stored at create is reused (:mod:`.move_claims`): the
   new flavor, the source in ``ignore_hosts`` (a cold migrate always, a
   resize unless ``[DEFAULT] allow_resize_to_same_host``), a chosen host
   as ``requested_destination`` (filtered, not forced);
3. :meth:`MoveClaims.schedule` hands the source's allocation to the
   migration's consumer and claims the destination for the instance;
4. ``prep_resize`` is cast to the destination with its selection and the
   alternates left in the same cell; a destination in another cell (the
   policy ``compute:servers:resize:cross_cell`` allowed it) is a
   cross-cell move the super conductor carries out itself
   (:mod:`.cross_cell_resize`).

A move the scheduler cannot place ends here: the migration in ``error``,
the source's allocation given back (by ``schedule``), the task cleared
with a fault, the event ``conductor_migrate_server`` in ``Error``.
"""

import functools
import traceback

from oslo_log import log as logging

from nimbus.common import exception
from nimbus.common import instance_states as states
from nimbus.common.objects import InstanceInfo
from nimbus.common.objects import migration as migration_obj
from nimbus.common.objects import Flavor
from nimbus.conductor import accelerators
from nimbus.conductor import cross_cell_resize
from nimbus.conductor import move_cells
from nimbus.conductor import move_claims
from nimbus.db import cell_instances as instances
from nimbus.db import cell_migrations
from nimbus.db import instance_actions

LOG = logging.getLogger(__name__)

EVENT = 'conductor_migrate_server'


def conductor_event(
    event, session, uuid, request_id, result=None, tb=None, details=None
):
    """Record the conductor's ``event`` of a move: its start, or with
    ``result`` its finish (``tb``, ``details`` on an error)."""
    if result is None:
        instance_actions.event_start(session, uuid, request_id, event, None)
    else:
        instance_actions.event_finish(
            session, uuid, request_id, event, None, result, tb, details
        )


_event = functools.partial(conductor_event, EVENT)


def migrate_server(
    conductor,
    ctxt,
    instance_uuid,
    cell_uuid,
    new_flavor,
    host,
    request_id,
    cross_cell=False,
):
    """One resize (``new_flavor`` a flavor dict) or cold migrate
    (``new_flavor`` None), optionally to ``host``; ``cross_cell``: the
    scheduler may choose a host of another cell (:mod:`.move_cells`).
    ``conductor`` is the SuperConductor (its databases, scheduler,
    placement and compute clients)."""
    cell = conductor.cells.by_uuid(cell_uuid)
    with conductor.cells.db(cell).session() as session:
        row = instances.get(session, instance_uuid)
        if row is None or row.deleted or row.task_state != states.RESIZE_PREP:
            LOG.info(
                'migrate_server: %s is no longer waiting for its move',
                instance_uuid,
            )
            return
        instance = instances.to_dict(row)
        kind = (
            migration_obj.RESIZE
            if new_flavor is not None
            else migration_obj.MIGRATION
        )
        migration = cell_migrations.create(
            session,
            {
                'instance_uuid': instance_uuid,
                'migration_type': kind,
                'status': 'pre-migrating',
                'source_compute': instance['host'],
                'source_node': instance['node'],
                'old_flavor': instance['flavor'],
                'new_flavor': new_flavor or instance['flavor'],
                'user_id': getattr(ctxt, 'user_id', None),
                'project_id': instance.get('project_id'),
                'details': {
                    'vm_state': instance['vm_state'],
                    'source_node_uuid': instance.get('compute_node_uuid'),
                    'source_accel_uuids': list(
                        instance.get('accel_uuids') or []
                    ),
                },
            },
        )
        _event(session, instance_uuid, request_id)
    try:
        stored = move_claims.stored_spec(conductor.api_db, instance_uuid)
        if stored is None:
            raise exception.NoValidHost(
                reason='the request spec of the server is gone'
            )
        same_host = kind == migration_obj.RESIZE and bool(
            conductor.conf.allow_resize_to_same_host
        )
        flavor = new_flavor or instance['flavor']
        spec = move_claims.move_spec(
            stored,
            instance_uuid,
            flavor=Flavor.from_primitive(flavor),
            ignore_hosts=() if same_host else (instance['host'],),
            destination={'host': host} if host else None,
        )
        accelerators.swap_profile(conductor.accelerator, ctxt, spec, flavor)
        move_cells.scope(spec, cell.uuid, cross_cell)
        claims = move_claims.MoveClaims(
            conductor.scheduler, conductor.placement
        )
        host_list = claims.schedule(
            ctxt, spec, instance_uuid, migration['uuid']
        )
        if not host_list:
            raise exception.NoValidHost(reason='no host fits the move')
        chosen = host_list[0]
        if move_cells.in_other_cell(chosen, cell.uuid):
            try:
                move_cells.check_movable(conductor, cell, instance, spec)
            except exception.NoValidHost:
                claims.undo(ctxt, instance_uuid, migration['uuid'])
                raise
        else:
            chosen = None
        host_list = [
            s for s in host_list if not move_cells.in_other_cell(s, cell.uuid)
        ]
    except Exception as exc:  # noqa: BLE001 - any scheduling failure fails the move
        fail(conductor, ctxt, cell, instance, migration, request_id, exc)
        return
    if chosen is not None:
        # Another cell (the policy allowed it): the super conductor
        # carries the server there (:mod:`.cross_cell_resize`).
        if cross_cell_resize.start(
            conductor, ctxt, cell, instance, migration, chosen, request_id
        ):
            _tell(conductor, ctxt, chosen.service_host, instance, spec)
        return
    selected = host_list[0]
    with conductor.cells.db(cell).session() as session:
        cell_migrations.update(
            session,
            migration['uuid'],
            dest_compute=selected.service_host,
            dest_node=selected.nodename,
            dest_host=selected.service_host,
        )
        _event(session, instance_uuid, request_id, 'Success')
        migration = cell_migrations.get(session, migration['uuid'])
    conductor.compute_api(cell).prep_resize(
        ctxt,
        selected.service_host,
        instance_uuid,
        request_id,
        migration_obj.Migration.from_row(migration),
        selected,
        host_list[1:],
    )
    _tell(conductor, ctxt, selected.service_host, instance, spec)


def fail(conductor, ctxt, cell, instance, migration, request_id, exc):
    """No destination: migration ``error``, task cleared with a fault (the
    server stays as it was on its source), the events in Error."""
    uuid = instance['uuid']
    reason = getattr(exc, 'message', None) or str(exc)
    LOG.info('The move of %s failed: %s', uuid, reason)
    with conductor.cells.db(cell).session() as session:
        cell_migrations.set_status(session, migration['uuid'], 'error')
        instances.transition(
            session,
            uuid,
            [states.ACTIVE, states.STOPPED],
            {
                'task_state': None,
                'fault': {
                    'message': reason[:255],
                    'details': ''.join(traceback.format_exception(exc)),
                    'code': 400
                    if isinstance(exc, exception.NoValidHost)
                    else 500,
                },
            },
            expected_task_states=[states.RESIZE_PREP],
        )
        _event(
            session,
            uuid,
            request_id,
            'Error',
            ''.join(traceback.format_exception(exc)),
            reason,
        )
        instance_actions.finish(
            session, uuid, request_id, instance_actions.ERROR
        )


def _tell(conductor, ctxt, host, instance, spec):
    """The schedulers learn the destination (their caches count the
    instance there from now on; the periodic sync corrects a revert)."""
    try:
        conductor.scheduler.update_instance_info(
            ctxt,
            host,
            InstanceInfo(
                uuid=instance['uuid'],
                flavor_id=spec.flavor.flavorid,
                group_uuid=spec.instance_group.uuid
                if spec.instance_group
                else None,
                image_ref=instance.get('image_ref'),
            ),
        )
    except Exception:  # a cache hint; the periodic reload covers it
        LOG.warning(
            'Could not tell the schedulers about %s',
            instance['uuid'],
            exc_info=True,
        )
