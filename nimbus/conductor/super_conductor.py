"""The super conductor: schedules build requests and hands them to cells.

It works at the API level: it reads build requests from the API database,
asks the scheduler for a host and alternates per instance, creates each
instance in its cell's database and casts the build to the chosen host on
that cell's bus. Instances that get no host are buried in cell0 with a
fault that says why.
"""

import sqlalchemy as sa
from oslo_log import log as logging
import oslo_messaging as messaging

from nimbus.db import cells as cells_mod
from nimbus.common import exception
from nimbus.common import instance_states as states
from nimbus.compute import rpcapi as compute_rpcapi
from nimbus.conductor import accelerators
from nimbus.conductor import faults
from nimbus.conductor import leases
from nimbus.conductor import unplaced as unplaced_mod
from nimbus.conductor import zones
from nimbus.db import build_requests
from nimbus.db import cell_instances as instances
from nimbus.db.api import models as api_models

LOG = logging.getLogger(__name__)


class SuperConductor:
    def __init__(
        self, conf, api_db, cells, scheduler_api, placement, accelerator=None
    ):
        self.conf = conf
        self.api_db = api_db
        self.cells = cells
        self.scheduler = scheduler_api
        self.placement = placement
        self.accelerator = accelerator
        self._compute_apis = {}

    def compute_api(self, cell):
        api = self._compute_apis.get(cell.uuid)
        if api is None:
            api = self._compute_apis[cell.uuid] = compute_rpcapi.ComputeAPI(
                self.cells.transport(cell), self.conf
            )
        return api

    def schedule_and_build_instances(self, ctxt, request_spec, instance_uuids):
        lease, instance_uuids = leases.lease_build_requests(
            ctxt, self.api_db, self.placement, instance_uuids, self.conf, LOG
        )
        if not instance_uuids:
            return
        released = set()  # scheduling records whose claims we released
        try:
            selections = self._select_destinations(
                ctxt, request_spec, instance_uuids, released
            )
        except exception.NoValidHost as exc:
            reason = (
                getattr(exc, 'reason', None)
                or getattr(exc, 'message', None)
                or str(exc)
            )
            # The scheduler logged the funnel summary (one INFO line); here
            # it is only the outcome of the request.
            LOG.debug('No valid host for %s: %s', instance_uuids, reason)
            message = faults.fault_summary(
                getattr(exc, 'explanation', None), fallback=reason
            )
            for uuid in instance_uuids:
                self.bury_in_cell0(ctxt, uuid, message, reason, lease)
            return
        except Exception as exc:
            # Whatever went wrong (the scheduler timed out, placement was
            # unreachable, a bug), no server may stay in BUILD forever, and
            # the claims the scheduler made for this request are released
            # (only those: see _release_claims).
            LOG.error('Scheduling %s failed: %s', instance_uuids, exc)
            self._release_claims(ctxt, request_spec, instance_uuids, released)
            for uuid in instance_uuids:
                self.bury_in_cell0(
                    ctxt,
                    uuid,
                    'Scheduling failed.',
                    '%s: %s' % (type(exc).__name__, exc),
                    lease,
                )
            return
        unplaced = []
        for index, uuid in enumerate(instance_uuids):
            host_list = selections[index] if index < len(selections) else []
            if not host_list:
                unplaced.append(uuid)
                continue
            try:
                self._build_in_cell(ctxt, uuid, request_spec, host_list, lease)
            except Exception as exc:
                LOG.exception('Handing %s to its cell failed', uuid)
                self.placement.remove_allocations(ctxt, uuid)
                self.bury_in_cell0(
                    ctxt, uuid, 'Build failed.', str(exc), lease
                )
        if unplaced:
            unplaced_mod.Unplaced(
                self.conf,
                self.api_db,
                self.scheduler,
                lambda c, u, m, d: self.bury_in_cell0(c, u, m, d, lease),
            ).bury_unplaced(ctxt, request_spec, instance_uuids, unplaced)

    def _select_destinations(
        self, ctxt, request_spec, instance_uuids, released
    ):
        """Ask the scheduler; if its answer is lost, clean up and ask again.

        A lost reply (the call timed out, e.g. across a broker restart) may
        hide claims the scheduler already made for these instances: they
        are released before the second try so it starts from a clean
        slate.
        """
        try:
            return self.scheduler.select_destinations(
                ctxt, request_spec, instance_uuids, True
            )
        except messaging.MessagingTimeout:
            LOG.warning(
                'No answer from the scheduler for %s; releasing '
                'its claims and asking again',
                instance_uuids,
            )
            self._release_claims(ctxt, request_spec, instance_uuids, released)
            return self.scheduler.select_destinations(
                ctxt, request_spec, instance_uuids, True
            )

    def _release_claims(self, ctxt, request_spec, instance_uuids, released):
        """Release the claims the scheduler made for this request, and no
        other allocation.

        An instance's consumer may hold allocations that are not ours: the
        scheduler gives an instance whose claim met a consumer generation
        conflict an empty selection and claims nothing for it. So nothing
        is deleted by instance uuid alone. The scheduler answers with an
        error only after releasing every claim of its decision (NoValidHost
        included); what a lost answer may hide is in the ``scheduled``
        records it writes before answering, one per instance it claimed.
        Those are released (each record once: ``released`` holds the ids
        done). A claim no record shows (a scheduler that died mid-decision)
        stays until its server, buried in cell0, is deleted: the API frees
        a server's allocations when it deletes it.
        """
        found = self._scheduled_records(
            request_spec.request_id or getattr(ctxt, 'request_id', None),
            instance_uuids,
            released,
        )
        if found is None:
            LOG.warning(
                'Could not tell which of %s the scheduler claimed; '
                'their claims, if any, are freed when the servers '
                'are deleted',
                instance_uuids,
            )
            return
        for record_id, uuid in found:
            released.add(record_id)
        for uuid in sorted({uuid for _id, uuid in found}):
            try:
                self.placement.remove_allocations(ctxt, uuid)
            except Exception:
                LOG.exception('Could not release the claim of %s', uuid)

    def _scheduled_records(self, request_id, instance_uuids, released):
        """``[(record id, instance uuid)]`` of the scheduler's ``scheduled``
        records of this request not in ``released``; None when unreadable."""
        if not request_id or not instance_uuids:
            return []
        rows = unplaced_mod.read_records(
            self.api_db, request_id, instance_uuids, 'scheduled', 'id'
        )
        if rows is None:
            return None
        return [(rid, uuid) for rid, uuid, _id in rows if rid not in released]

    @staticmethod
    def _build_request(session, uuid):
        return build_requests.get(session, uuid)

    @staticmethod
    def _instance_values(row):
        """The cell instance's values the API's BuildRequest gives."""
        return build_requests.request_of(row).instance_values()

    def _build_in_cell(self, ctxt, uuid, request_spec, host_list, lease=None):
        selected, alternates = host_list[0], host_list[1:]
        cell = self.cells.by_uuid(selected.cell_uuid)
        with self.api_db.session() as session:
            build_request = self._build_request(session, uuid)
            if build_request is None:
                # Deleted by the user while it was being scheduled.
                LOG.info(
                    'Build request %s vanished; releasing its claim', uuid
                )
                self.placement.remove_allocations(ctxt, uuid)
                return
            values = self._instance_values(build_request)
        group = request_spec.instance_group
        values.update(
            {
                'uuid': uuid,
                'host': selected.service_host,
                'node': selected.nodename,
                'compute_node_uuid': selected.compute_node_uuid,
                'vm_state': states.BUILDING,
                'task_state': states.SCHEDULING,
                # The cell keeps the group (late group check) and
                # the untried alternates (the build check
                # reschedules a build whose compute died).
                'instance_group_uuid': group.uuid if group else None,
                'build_alternates': instances.alternates(
                    request_spec, alternates
                ),
            }
        )
        with self.cells.db(cell).session() as session:
            if not values.get('availability_zone'):
                # As Nova: the server takes its host's zone. Each alternate
                # carries its own, for the cell conductor to record when
                # it reschedules there (a cell never reads aggregates).
                default = zones.default_zone(self.conf)
                with self.api_db.session() as api_session:
                    for selection in host_list:
                        selection.availability_zone = zones.host_zone(
                            api_session,
                            session,
                            selection.service_host,
                            default,
                        )
                values['availability_zone'] = selected.availability_zone
                values['build_alternates'] = instances.alternates(
                    request_spec, alternates
                )
            if instances.get(session, uuid) is None:
                instance = instances.to_dict(instances.create(session, values))
            else:
                instance = instances.to_dict(instances.get(session, uuid))
        with self.api_db.session() as session:
            build_request = self._build_request(session, uuid)
            if build_request is None:
                # Deleted between our two reads: undo the cell record.
                with self.cells.db(cell).session() as cell_session:
                    instances.transition(
                        cell_session,
                        uuid,
                        [states.BUILDING],
                        {'vm_state': states.DELETED, 'deleted': True},
                    )
                self.placement.remove_allocations(ctxt, uuid)
                return
            if not leases.finish(session, uuid, lease):
                LOG.warning(
                    'Instance %s: its schedule lease was taken over; '
                    'leaving it to the new holder',
                    uuid,
                )
                return
            session.execute(
                sa.update(api_models.InstanceMapping)
                .where(api_models.InstanceMapping.instance_uuid == uuid)
                .values(cell_id=cell.id)
            )
        try:
            accel_uuids = accelerators.bind_for_build(
                self.accelerator, ctxt, instance, request_spec, selected
            )
        except accelerators.AcceleratorBindError as exc:
            self._fail_in_cell(ctxt, cell, uuid, str(exc))
            return
        if accel_uuids:
            with self.cells.db(cell).session() as cell_session:
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
        self.compute_api(cell).build_and_run_instance(
            ctxt,
            selected.service_host,
            instance,
            request_spec,
            selected,
            alternates,
            accel_uuids,
        )
        self._tell_schedulers(
            ctxt, selected.service_host, instance, request_spec
        )

    def _fail_in_cell(self, ctxt, cell, uuid, reason):
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

    def _tell_schedulers(self, ctxt, host, instance, request_spec):
        """Every scheduler's cache learns where the instance went (server
        group and instance-count filters and the image-properties weigher
        need it before their next reload)."""
        group = request_spec.instance_group
        try:
            self.scheduler.update_instance_info(
                ctxt,
                host,
                {
                    'uuid': instance['uuid'],
                    'flavor_id': (instance.get('flavor') or {}).get(
                        'flavorid'
                    ),
                    'group_uuid': group.uuid if group else None,
                    'image_ref': instance.get('image_ref'),
                    # Spares every scheduler a read of the images table.
                    'image_properties': (
                        request_spec.image.properties
                        if request_spec.image is not None
                        else None
                    ),
                },
            )
        except Exception:  # a cache hint; the periodic reload covers it
            LOG.warning(
                'Could not tell the schedulers about %s',
                instance['uuid'],
                exc_info=True,
            )

    def bury_in_cell0(self, ctxt, uuid, message, details, lease=None):
        """Create the instance in cell0, in ERROR, with a fault."""
        cell0 = self.cells.cell0()
        with self.api_db.session() as session:
            build_request = self._build_request(session, uuid)
            if build_request is None or not leases.holds(session, uuid, lease):
                return
            values = self._instance_values(build_request)
        values.update(
            {'uuid': uuid, 'vm_state': states.ERROR, 'task_state': None}
        )
        with self.cells.db(cell0).session() as session:
            if instances.get(session, uuid) is None:
                instances.create(session, values)
                instances.add_fault(session, uuid, message, details)
        with self.api_db.session() as session:
            if not leases.finish(session, uuid, lease) and lease is not None:
                return
            session.execute(
                sa.update(api_models.InstanceMapping)
                .where(api_models.InstanceMapping.instance_uuid == uuid)
                .values(cell_id=cell0.id)
            )


CELL0_UUID = cells_mod.CELL0_UUID
