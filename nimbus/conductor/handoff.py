"""Step 17 of the scheduling workflow: placed instances go to their cells.

The super conductor (:mod:`.super_conductor`) schedules; :class:`Handoff`
takes the placed instances from there and never calls back: each step
returns what happened and the super conductor acts on it (a failure of
the one-at-a-time path or of a batch's preparation is raised to it; it
buries the instance in cell0, or hands the batch over one at a time).

One instance (:meth:`Handoff.build_one`): its build request becomes its
row in the selected host's cell (an instance already there is used as it
is), the build request ends under the schedule lease and the instance is
mapped to the cell, then the build is cast to the host and the schedulers
learn where it went.

The placed instances of a multi-create go in a few transactions instead of
a few per instance (:meth:`Handoff.prepare_many`, then
:meth:`Handoff.send_many`):

1. their build requests are read in one API query (a build request gone
   meanwhile has its claim released, as one at a time);
2. each selected and alternate host's availability zone is worked out once
   per host (a server created without one takes its host's, as Nova);
3. the instances are created in each cell in one transaction per cell;
4. in one API transaction, the build requests under our lease end and
   those instances are mapped to their cells; an instance whose build
   request was deleted meanwhile is undone in its cell and its claim
   released, one whose lease was taken over is left to the new holder (as
   one at a time);
5. accelerators are bound (requests with a device profile), each build is
   cast to its host with a request spec narrowed to that instance, and the
   schedulers learn where the instances went, one cast per host.

Instances are :class:`~nimbus.common.objects.Instance` records from the
moment they are read from (or written to) their cell; build requests are
:class:`~nimbus.common.objects.BuildRequest` from the moment they are read
from the API database.
"""

from concurrent import futures
import copy

from oslo_log import log as logging

from nimbus.common import instance_states as states
from nimbus.common.objects import Instance
from nimbus.common.objects import InstanceInfo
from nimbus.compute import rpcapi as compute_rpcapi
from nimbus.conductor import accelerators
from nimbus.conductor import leases
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
    """The cell row of ``uuid`` from its BuildRequest, on the selected host
    of ``host_list``."""
    selected = host_list[0]
    values = build_request.instance_values()
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


def _record(row):
    """The Instance of a cell's row (the edge with the cell database)."""
    return Instance.from_primitive(instances.to_dict(row))


def _build_requests(session, uuids):
    """``{uuid: BuildRequest}`` of those of ``uuids`` still there."""
    return {
        uuid: build_requests.request_of(row)
        for uuid, row in build_requests.get_many(session, uuids).items()
    }


def _info(instance, request_spec):
    """What the schedulers' caches learn of a placed Instance."""
    group = request_spec.instance_group
    return InstanceInfo(
        uuid=instance.uuid,
        flavor_id=(instance.flavor or {}).get('flavorid'),
        group_uuid=group.uuid if group else None,
        image_ref=instance.image_ref,
        # Spares every scheduler a read of the images table.
        image_properties=(
            request_spec.image.properties
            if request_spec.image is not None
            else None
        ),
    )


def _zoned(values, host_list, zone_of, request_spec):
    """The instance ``values`` with their zone and stored alternates. As
    Nova: a server that asked for no zone takes its host's (``zone_of``:
    host -> zone); each alternate carries its own, for the cell conductor
    to record when it reschedules there (a cell never reads aggregates)."""
    if not values.get('availability_zone'):
        for selection in host_list:
            selection.availability_zone = zone_of[selection.service_host]
        values['availability_zone'] = host_list[0].availability_zone
    values['build_alternates'] = instances.alternates(
        request_spec, host_list[1:]
    )


class Handoff:
    """Step 17 with the super conductor's dependencies: its databases, its
    cells (:class:`nimbus.common.cells.Cells`-like: ``by_uuid``, ``db``,
    ``transport``), the scheduler's and placement's clients and the
    accelerator binder (or None)."""

    def __init__(
        self, conf, api_db, cells, scheduler, placement, accelerator=None
    ):
        self.conf = conf
        self.api_db = api_db
        self.cells = cells
        self.scheduler = scheduler
        self.placement = placement
        self.accelerator = accelerator
        self._compute_apis = {}

    def compute_api(self, cell):
        """The compute RPC API on ``cell``'s bus (one per cell)."""
        api = self._compute_apis.get(cell.uuid)
        if api is None:
            api = self._compute_apis[cell.uuid] = compute_rpcapi.ComputeAPI(
                self.cells.transport(cell), self.conf
            )
        return api

    # -- one instance ---------------------------------------------------------

    def build_one(self, ctxt, uuid, request_spec, host_list, lease=None):
        """Step 17 for one instance: the selected host's cell gets the
        instance (and its mapping), then the host gets the build. An
        error is raised to the caller (which buries the instance)."""
        selected = host_list[0]
        cell = self.cells.by_uuid(selected.cell_uuid)
        instance = self._create_in_cell(
            ctxt, cell, uuid, request_spec, host_list
        )
        if instance is None or not self._map_to_cell(ctxt, cell, uuid, lease):
            return
        if not self.send_build(ctxt, cell, instance, request_spec, host_list):
            return
        self.tell_schedulers(
            ctxt, selected.service_host, instance, request_spec
        )

    def _create_in_cell(self, ctxt, cell, uuid, request_spec, host_list):
        """The Instance in its cell (created from the build request, on the
        selected host, with the untried alternates); None when the build
        request is gone (its claim is released)."""
        hosts = {selection.service_host for selection in host_list}
        with self.api_db.session() as session:
            # One API transaction: the build request and, for a server
            # created without a zone, its hosts' aggregate zones.
            build_request = build_requests.request_for(session, uuid)
            zoneless = (
                build_request is not None
                and not build_request.availability_zone
            )
            names = zones.aggregate_zones(session, hosts) if zoneless else {}
        if build_request is None:
            # Deleted by the user while it was being scheduled.
            LOG.info('Build request %s vanished; releasing its claim', uuid)
            self.placement.remove_allocations(ctxt, uuid)
            return None
        values = instance_values(build_request, uuid, request_spec, host_list)
        with self.cells.db(cell).session() as session:
            zone_of = (
                {}
                if values.get('availability_zone')
                else zones.resolve_zones(
                    session, names, hosts, zones.default_zone(self.conf)
                )
            )
            _zoned(values, host_list, zone_of, request_spec)
            if instances.existing(session, [uuid]):
                # A retry (a batch that failed after its cell's insert).
                return _record(instances.get(session, uuid))
            created = instances.insert(session, values)
            instance_actions.start_created(session, [values], ctxt.request_id)
            return Instance.from_primitive(created)

    def _map_to_cell(self, ctxt, cell, uuid, lease):
        """End the build request under our lease and map the instance to
        its cell; False when the build request was deleted meanwhile (the
        cell's row is undone and the claim released) or the lease was
        taken over."""
        with self.api_db.session() as session:
            if not leases.finish(session, uuid, lease):
                # Deleted by the user meanwhile (another process's
                # committed delete is seen by this read), or taken over.
                if build_requests.get(session, uuid) is None:
                    self.undo_vanished(ctxt, cell, uuid)
                else:
                    _taken_over(uuid)
                return False
            instance_mappings.set_cell(session, uuid, cell.id)
        return True

    # -- many instances -------------------------------------------------------

    def prepare_many(self, ctxt, request_spec, placed, lease):
        """Steps 1-4 for ``placed`` (``[(uuid, host_list)]``): ``[(cell,
        Instance, host_list)]`` ready to cast. An error is raised to the
        caller (which hands the instances over one at a time: an instance
        this left in its cell is used as it is)."""
        uuids = [uuid for uuid, _hosts in placed]
        with self.api_db.session() as session:
            found = _build_requests(session, uuids)
        cells, values = {}, {}
        for uuid, host_list in placed:
            if uuid not in found:
                LOG.info(
                    'Build request %s vanished; releasing its claim', uuid
                )
                self.placement.remove_allocations(ctxt, uuid)
                continue
            cell = self.cells.by_uuid(host_list[0].cell_uuid)
            cells.setdefault(cell.uuid, (cell, []))[1].append(
                (uuid, host_list)
            )
            values[uuid] = instance_values(
                found[uuid], uuid, request_spec, host_list
            )
        records = {}
        for cell, members in cells.values():
            records.update(
                self._create_many(ctxt, cell, members, values, request_spec)
            )
        mapped = self._map_many(ctxt, cells, lease)
        return [
            (cell, records[uuid], host_list)
            for cell, members in cells.values()
            for uuid, host_list in members
            if uuid in mapped
        ]

    def send_many(self, ctxt, request_spec, ready):
        """Step 5 for ``ready`` (:meth:`prepare_many`'s answer); a build
        that cannot be cast fails its instance in its cell."""

        def cast(item):
            cell, instance, host_list = item
            ctxt.update_store()
            try:
                self.send_build(ctxt, cell, instance, request_spec, host_list)
            except Exception as exc:
                LOG.exception('Handing %s to its cell failed', instance.uuid)
                self.placement.remove_allocations(ctxt, instance.uuid)
                self.fail_in_cell(ctxt, cell, instance.uuid, str(exc))
                return None
            return host_list[0].service_host, instance

        # Each cast waits for the broker's publisher confirm (a round
        # trip): sent from a few threads at once, on as many pooled
        # connections.
        def tell(item):
            ctxt.update_store()
            host, placed_here = item
            self.tell_schedulers(ctxt, host, placed_here, request_spec)

        with futures.ThreadPoolExecutor(
            CAST_WORKERS, thread_name_prefix='handoff'
        ) as pool:
            sent = [done for done in pool.map(cast, ready) if done]
            by_host = {}
            for host, instance in sent:
                by_host.setdefault(host, []).append(instance)
            list(pool.map(tell, by_host.items()))

    def _create_many(self, ctxt, cell, members, values, request_spec):
        """Steps 2 and 3 for one cell: ``{uuid: Instance}``."""
        default = zones.default_zone(self.conf)
        with (
            self.cells.db(cell).session() as session,
            self.api_db.session() as api_session,
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
                _zoned(values[uuid], host_list, zone_of, request_spec)
            fresh = [values[u] for u, _h in members if u not in have]
            created = instances.create_many(session, fresh)
            instance_actions.start_created(session, fresh, ctxt.request_id)
            out = {row.uuid: _record(row) for row in created}
            for uuid in have:
                out[uuid] = _record(instances.get(session, uuid))
        return out

    def _map_many(self, ctxt, cells, lease):
        """Step 4: the uuids whose build request we ended and mapped."""
        mapped, vanished = set(), []
        with self.api_db.session() as session:
            for cell, members in cells.values():
                uuids = [u for u, _h in members]
                present = set(build_requests.get_many(session, uuids))
                ended = build_requests.delete_leased_many(
                    session, uuids, lease
                )
                instance_mappings.set_cells(session, ended, cell.id)
                mapped |= ended
                # A build request read above but not ended was deleted by
                # the user before the locked delete (read again: another
                # process's committed delete is seen), or taken over.
                unended = [u for u in uuids if u in present and u not in ended]
                still = (
                    set(build_requests.get_many(session, unended))
                    if unended
                    else set()
                )
                for uuid in uuids:
                    if uuid not in present or (
                        uuid not in ended and uuid not in still
                    ):
                        vanished.append((cell, uuid))
                    elif uuid not in ended:
                        _taken_over(uuid)
        for cell, uuid in vanished:
            self.undo_vanished(ctxt, cell, uuid)
        return mapped

    # -- the steps both share -------------------------------------------------

    def undo_vanished(self, ctxt, cell, uuid):
        """The build request was deleted after the instance was written
        into its cell: the cell's record is marked deleted and the claim
        released."""
        self._while_building(
            cell, uuid, {'vm_state': states.DELETED, 'deleted': True}
        )
        self.placement.remove_allocations(ctxt, uuid)

    def _while_building(self, cell, uuid, changes):
        """``changes`` onto the instance in its cell while it builds."""
        with self.cells.db(cell).session() as cell_session:
            instances.transition(
                cell_session, uuid, [states.BUILDING], changes
            )

    def fail_in_cell(self, ctxt, cell, uuid, reason):
        """The instance (already in its cell) goes to ERROR with a fault
        and its claim is released."""
        LOG.error('Instance %s: %s', uuid, reason)
        self.placement.remove_allocations(ctxt, uuid)
        with self.cells.db(cell).session() as cell_session:
            instances.transition(
                cell_session,
                uuid,
                [states.BUILDING],
                {'vm_state': states.ERROR, 'task_state': None},
            )
            instances.add_fault(
                cell_session, uuid, 'Accelerator binding failed.', reason
            )

    def send_build(self, ctxt, cell, instance, request_spec, host_list):
        """Step 5 for one Instance: accelerators bound on the selected
        host, then the build cast. False when the accelerators could not
        be bound (the instance failed in its cell)."""
        uuid = instance.uuid
        selected, alternates = host_list[0], host_list[1:]
        try:
            accel_uuids = accelerators.bind_for_build(
                self.accelerator, ctxt, uuid, request_spec, selected
            )
        except accelerators.AcceleratorBindError as exc:
            self.fail_in_cell(ctxt, cell, uuid, str(exc))
            return False
        if accel_uuids:
            self._while_building(cell, uuid, {'accel_uuids': accel_uuids})
            instance.accel_uuids = accel_uuids
        LOG.info(
            'Instance %s scheduled to %s in %s with %d alternate(s)',
            uuid,
            selected.service_host,
            cell.name,
            len(alternates),
        )
        self.compute_api(cell).build_and_run_instance(
            ctxt,
            selected.service_host,
            instance,
            for_instance(request_spec, uuid),
            selected,
            alternates,
            accel_uuids,
        )
        return True

    def tell_schedulers(self, ctxt, host, placed, request_spec):
        """Every scheduler's cache learns where ``placed`` went: one
        Instance (one at a time) or a list of those placed on ``host`` (a
        batch), in one ``update_instance_info`` cast. The server group and
        instance-count filters and the image-properties weigher need it
        before their next reload; it is a cache hint (the periodic reload
        covers a lost one)."""
        many = isinstance(placed, list)
        try:
            self.scheduler.update_instance_info(
                ctxt,
                host,
                [_info(i, request_spec) for i in placed]
                if many
                else _info(placed, request_spec),
            )
        except Exception:
            if many:
                LOG.warning(
                    'Could not tell the schedulers about %d instance(s) on %s',
                    len(placed),
                    host,
                    exc_info=True,
                )
            else:
                LOG.warning(
                    'Could not tell the schedulers about %s',
                    placed.uuid,
                    exc_info=True,
                )


def _taken_over(uuid):
    LOG.warning(
        'Instance %s: its schedule lease was taken over; leaving it to the '
        'new holder',
        uuid,
    )
