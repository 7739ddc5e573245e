"""Step 17 for many instances at once: the placed instances of one request
go to their cells in a few transactions instead of a few per instance.

For the instances of a multi-create the scheduler placed, the super
conductor

1. reads their build requests in one API query (a build request gone
   meanwhile has its claim released, as one at a time);
2. works out each selected and alternate host's availability zone once per
   host (a server created without one takes its host's, as Nova);
3. creates the instances in each cell in one transaction per cell;
4. in one API transaction, ends the build requests it holds the lease of
   and maps those instances to their cells; an instance whose build request
   was deleted meanwhile is undone in its cell and its claim released, one
   whose lease was taken over is left to the new holder (as one at a time);
5. binds accelerators (requests with a device profile), casts each build to
   its host with a request spec narrowed to that instance, and tells the
   schedulers where the instances went, one cast per host.

If any of steps 1-4 fails, the instances go through the one-at-a-time path
(``SuperConductor._build_in_cell``, with its own error handling), which
takes over what a partial run left: an instance already created in its
cell is used as it is.
"""

from concurrent import futures
import copy

from oslo_log import log as logging

from nimbus.common import instance_states as states
from nimbus.common.objects import Instance
from nimbus.common.objects import InstanceInfo
from nimbus.conductor import accelerators
from nimbus.conductor import zones
from nimbus.db import build_requests
from nimbus.db import cell_instances as instances
from nimbus.db import instance_actions
from nimbus.db import instance_mappings

LOG = logging.getLogger(__name__)

# Threads casting the builds of one batch.
CAST_WORKERS = 8


def for_instance(request_spec, uuid):
    """``request_spec`` as one instance's (the build cast and the compute's
    journal carry it): its own uuid instead of every uuid of the
    multi-create (1000 of them made each build message 37 KB)."""
    one = copy.copy(request_spec)
    one.instance_uuids = [uuid]
    one.num_instances = 1
    one.min_count = 1
    return one


def instance_values(build_request, uuid, request_spec, host_list):
    """The cell row of ``uuid`` from its build request, on the selected
    host of ``host_list``."""
    selected = host_list[0]
    values = build_requests.request_of(build_request).instance_values()
    group = request_spec.instance_group
    values.update(
        {
            'uuid': uuid,
            'host': selected.service_host,
            'node': selected.nodename,
            'compute_node_uuid': selected.compute_node_uuid,
            'vm_state': states.BUILDING,
            'task_state': states.SCHEDULING,
            # The cell keeps the group (late group check) and the untried
            # alternates (the build check reschedules a build whose
            # compute died).
            'instance_group_uuid': group.uuid if group else None,
        }
    )
    return values


def build_many(conductor, ctxt, request_spec, placed, lease):
    """Hand ``placed`` (``[(uuid, host_list)]``) to their cells (steps 1-5
    above); the one-at-a-time path when the batch fails."""
    try:
        ready = _prepare(conductor, ctxt, request_spec, placed, lease)
    except Exception:
        LOG.exception(
            'Handing %d instances to their cells in one batch failed; '
            'handing them one at a time',
            len(placed),
        )
        for uuid, host_list in placed:
            conductor.build_one(ctxt, uuid, request_spec, host_list, lease)
        return

    def cast(item):
        cell, instance, host_list = item
        uuid = instance['uuid']
        ctxt.update_store()
        try:
            send_build(
                conductor, ctxt, cell, instance, request_spec, host_list
            )
        except Exception as exc:
            LOG.exception('Handing %s to its cell failed', uuid)
            conductor.placement.remove_allocations(ctxt, uuid)
            conductor.fail_in_cell(ctxt, cell, uuid, str(exc))
            return None
        return host_list[0].service_host, instance

    # Each cast waits for the broker's publisher confirm (a round trip):
    # sent from a few threads at once, on as many pooled connections.
    def tell(item):
        ctxt.update_store()
        host, placed_here = item
        _tell_schedulers(conductor, ctxt, host, placed_here, request_spec)

    with futures.ThreadPoolExecutor(
        CAST_WORKERS, thread_name_prefix='handoff'
    ) as pool:
        sent = [done for done in pool.map(cast, ready) if done]
        by_host = {}
        for host, instance in sent:
            by_host.setdefault(host, []).append(instance)
        list(pool.map(tell, by_host.items()))


def _prepare(conductor, ctxt, request_spec, placed, lease):
    """Steps 1-4: ``[(cell, instance dict, host_list)]`` ready to cast."""
    uuids = [uuid for uuid, _hosts in placed]
    with conductor.api_db.session() as session:
        found = build_requests.get_many(session, uuids)
    cells, values = {}, {}
    for uuid, host_list in placed:
        if uuid not in found:
            LOG.info('Build request %s vanished; releasing its claim', uuid)
            conductor.placement.remove_allocations(ctxt, uuid)
            continue
        cell = conductor.cells.by_uuid(host_list[0].cell_uuid)
        cells.setdefault(cell.uuid, (cell, []))[1].append((uuid, host_list))
        values[uuid] = instance_values(
            found[uuid], uuid, request_spec, host_list
        )
    rows = {}
    for cell, members in cells.values():
        rows.update(
            _create(conductor, ctxt, cell, members, values, request_spec)
        )
    mapped = _map(conductor, ctxt, cells, lease)
    return [
        (cell, rows[uuid], host_list)
        for cell, members in cells.values()
        for uuid, host_list in members
        if uuid in mapped
    ]


def _create(conductor, ctxt, cell, members, values, request_spec):
    """Step 2 and 3 for one cell: ``{uuid: instance dict}``."""
    default = zones.default_zone(conductor.conf)
    with (
        conductor.cells.db(cell).session() as session,
        conductor.api_db.session() as api_session,
    ):
        have = instances.existing(session, [u for u, _h in members])
        zoneless = {
            s.service_host
            for uuid, host_list in members
            if not values[uuid].get('availability_zone')
            for s in host_list
        }
        zone_of = zones.host_zones(api_session, session, zoneless, default)
        for uuid, host_list in members:
            row = values[uuid]
            if not row.get('availability_zone'):
                for selection in host_list:
                    selection.availability_zone = zone_of[
                        selection.service_host
                    ]
                row['availability_zone'] = host_list[0].availability_zone
            row['build_alternates'] = instances.alternates(
                request_spec, host_list[1:]
            )
        fresh = [values[u] for u, _h in members if u not in have]
        created = instances.create_many(session, fresh)
        instance_actions.start_created(session, fresh, ctxt.request_id)
        out = {row.uuid: instances.to_dict(row) for row in created}
        for uuid in have:
            out[uuid] = instances.to_dict(instances.get(session, uuid))
    return out


def _map(conductor, ctxt, cells, lease):
    """Step 4: the uuids whose build request we ended and mapped."""
    mapped, vanished = set(), []
    with conductor.api_db.session() as session:
        for cell, members in cells.values():
            uuids = [u for u, _h in members]
            present = set(build_requests.get_many(session, uuids))
            ended = build_requests.delete_leased_many(session, uuids, lease)
            instance_mappings.set_cells(session, ended, cell.id)
            mapped |= ended
            for uuid in uuids:
                if uuid not in present:
                    vanished.append((cell, uuid))
                elif uuid not in ended:
                    LOG.warning(
                        'Instance %s: its schedule lease was taken over; '
                        'leaving it to the new holder',
                        uuid,
                    )
    for cell, uuid in vanished:
        undo_vanished(conductor, ctxt, cell, uuid)
    return mapped


def undo_vanished(conductor, ctxt, cell, uuid):
    """The build request was deleted after the instance was written into
    its cell: the cell's record is marked deleted and the claim released
    (also the super conductor's one-at-a-time path)."""
    with conductor.cells.db(cell).session() as cell_session:
        instances.transition(
            cell_session,
            uuid,
            [states.BUILDING],
            {'vm_state': states.DELETED, 'deleted': True},
        )
    conductor.placement.remove_allocations(ctxt, uuid)


def send_build(conductor, ctxt, cell, instance, request_spec, host_list):
    """Step 5 for one instance (also the super conductor's one-at-a-time
    path): accelerators bound on the selected host, then the build cast.
    False when the accelerators could not be bound (the instance failed
    in its cell)."""
    uuid = instance['uuid']
    selected, alternates = host_list[0], host_list[1:]
    try:
        accel_uuids = accelerators.bind_for_build(
            conductor.accelerator, ctxt, instance, request_spec, selected
        )
    except accelerators.AcceleratorBindError as exc:
        conductor.fail_in_cell(ctxt, cell, uuid, str(exc))
        return False
    if accel_uuids:
        with conductor.cells.db(cell).session() as cell_session:
            instances.transition(
                cell_session,
                uuid,
                [states.BUILDING],
                {'accel_uuids': accel_uuids},
            )
        instance['accel_uuids'] = accel_uuids
    LOG.info(
        'Instance %s scheduled to %s in %s with %d alternate(s)',
        uuid,
        selected.service_host,
        cell.name,
        len(alternates),
    )
    conductor.compute_api(cell).build_and_run_instance(
        ctxt,
        selected.service_host,
        Instance.from_primitive(instance),
        for_instance(request_spec, uuid),
        selected,
        alternates,
        accel_uuids,
    )
    return True


def _tell_schedulers(conductor, ctxt, host, placed_here, request_spec):
    """One ``update_instance_info`` cast for the instances placed on
    ``host`` (a cache hint: the periodic reload covers a lost one)."""
    group = request_spec.instance_group
    image = (
        request_spec.image.properties
        if request_spec.image is not None
        else None
    )
    try:
        conductor.scheduler.update_instance_info(
            ctxt,
            host,
            [
                InstanceInfo(
                    uuid=instance['uuid'],
                    flavor_id=(instance.get('flavor') or {}).get('flavorid'),
                    group_uuid=group.uuid if group else None,
                    image_ref=instance.get('image_ref'),
                    image_properties=image,
                )
                for instance in placed_here
            ],
        )
    except Exception:
        LOG.warning(
            'Could not tell the schedulers about %d instance(s) on %s',
            len(placed_here),
            host,
            exc_info=True,
        )
