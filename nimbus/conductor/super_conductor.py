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

from nimbus.common import cells as cells_mod
from nimbus.common import exception
from nimbus.common import instance_states as states
from nimbus.compute import rpcapi as compute_rpcapi
from nimbus.conductor import instances
from nimbus.db.api import models as api_models

LOG = logging.getLogger(__name__)


class SuperConductor:

    def __init__(self, conf, api_db, cells, scheduler_api, placement,
                 accelerator=None):
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
                self.cells.transport(cell), self.conf)
        return api

    def schedule_and_build_instances(self, ctxt, request_spec,
                                     instance_uuids):
        try:
            selections = self._select_destinations(ctxt, request_spec,
                                                   instance_uuids)
        except exception.NoValidHost as exc:
            LOG.info('No valid host for %s: %s', instance_uuids, exc)
            for uuid in instance_uuids:
                self.bury_in_cell0(ctxt, uuid, 'No valid host was found.',
                                   str(exc))
            return
        except Exception as exc:
            # Whatever went wrong (the scheduler timed out, placement was
            # unreachable, a bug), no server may stay in BUILD forever, and
            # any claim the scheduler made before the failure is released.
            LOG.error('Scheduling %s failed: %s', instance_uuids, exc)
            self._release_claims(ctxt, instance_uuids)
            for uuid in instance_uuids:
                self.bury_in_cell0(ctxt, uuid, 'Scheduling failed.',
                                   '%s: %s' % (type(exc).__name__, exc))
            return
        for index, uuid in enumerate(instance_uuids):
            host_list = selections[index] if index < len(selections) else []
            if not host_list:
                self.bury_in_cell0(
                    ctxt, uuid, 'No valid host was found.',
                    'The scheduler placed %d of the %d instances of this '
                    'request; this one did not fit.'
                    % (sum(1 for s in selections if s), len(instance_uuids)))
                continue
            try:
                self._build_in_cell(ctxt, uuid, request_spec, host_list)
            except Exception as exc:
                LOG.exception('Handing %s to its cell failed', uuid)
                self.placement.remove_allocations(ctxt, uuid)
                self.bury_in_cell0(ctxt, uuid, 'Build failed.', str(exc))

    def _select_destinations(self, ctxt, request_spec, instance_uuids):
        """Ask the scheduler; if its answer is lost, clean up and ask again.

        A lost reply (the call timed out, e.g. across a broker restart) may
        hide claims the scheduler already made for these instances: they
        are released before the second try so it starts from a clean
        slate.
        """
        try:
            return self.scheduler.select_destinations(
                ctxt, request_spec, instance_uuids, True)
        except messaging.MessagingTimeout:
            LOG.warning('No answer from the scheduler for %s; releasing '
                        'any claims and asking again', instance_uuids)
            self._release_claims(ctxt, instance_uuids)
            return self.scheduler.select_destinations(
                ctxt, request_spec, instance_uuids, True)

    def _release_claims(self, ctxt, instance_uuids):
        for uuid in instance_uuids:
            try:
                self.placement.remove_allocations(ctxt, uuid)
            except Exception:
                LOG.exception('Could not release the claim of %s', uuid)

    def _build_request(self, session, uuid):
        return session.execute(
            sa.select(api_models.BuildRequest).where(
                api_models.BuildRequest.instance_uuid == uuid)).scalar()

    def _build_in_cell(self, ctxt, uuid, request_spec, host_list):
        selected, alternates = host_list[0], host_list[1:]
        cell = self.cells.by_uuid(selected['cell_uuid'])
        with self.api_db.session() as session:
            build_request = self._build_request(session, uuid)
            if build_request is None:
                # Deleted by the user while it was being scheduled.
                LOG.info('Build request %s vanished; releasing its claim',
                         uuid)
                self.placement.remove_allocations(ctxt, uuid)
                return
            values = dict(build_request.instance)
        values.update({'uuid': uuid, 'host': selected['service_host'],
                       'node': selected['nodename'],
                       'compute_node_uuid': selected['compute_node_uuid'],
                       'vm_state': states.BUILDING,
                       'task_state': states.SCHEDULING})
        with self.cells.db(cell).session() as session:
            if instances.get(session, uuid) is None:
                instance = instances.to_dict(instances.create(session,
                                                              values))
            else:
                instance = instances.to_dict(instances.get(session, uuid))
        with self.api_db.session() as session:
            build_request = self._build_request(session, uuid)
            if build_request is None:
                # Deleted between our two reads: undo the cell record.
                with self.cells.db(cell).session() as cell_session:
                    instances.transition(cell_session, uuid,
                                         [states.BUILDING],
                                         {'vm_state': states.DELETED,
                                          'deleted': True})
                self.placement.remove_allocations(ctxt, uuid)
                return
            session.delete(build_request)
            session.execute(
                sa.update(api_models.InstanceMapping)
                .where(api_models.InstanceMapping.instance_uuid == uuid)
                .values(cell_id=cell.id))
        accel_uuids = []
        if self.accelerator is not None and request_spec.get(
                'device_profile'):
            accel_uuids = self.accelerator.create_and_bind(
                ctxt, instance, request_spec, selected)
        LOG.info('Instance %s scheduled to %s in %s with %d alternate(s)',
                 uuid, selected['service_host'], cell.name, len(alternates))
        self.compute_api(cell).build_and_run_instance(
            ctxt, selected['service_host'], instance, request_spec,
            selected, alternates, accel_uuids)
        self._tell_schedulers(ctxt, selected['service_host'], instance,
                              request_spec)

    def _tell_schedulers(self, ctxt, host, instance, request_spec):
        """Every scheduler's cache learns where the instance went (server
        group and instance-count filters need it before their next reload).
        """
        group = request_spec.get('instance_group') or {}
        try:
            self.scheduler.update_instance_info(ctxt, host, {
                'uuid': instance['uuid'],
                'flavor_id': (instance.get('flavor') or {}).get('flavorid'),
                'group_uuid': group.get('uuid'),
                'image_ref': instance.get('image_ref')})
        except Exception:  # a cache hint; the periodic reload covers it
            LOG.warning('Could not tell the schedulers about %s',
                        instance['uuid'], exc_info=True)

    def bury_in_cell0(self, ctxt, uuid, message, details):
        """Create the instance in cell0, in ERROR, with a fault."""
        cell0 = self.cells.cell0()
        with self.api_db.session() as session:
            build_request = self._build_request(session, uuid)
            if build_request is None:
                return
            values = dict(build_request.instance)
        values.update({'uuid': uuid, 'vm_state': states.ERROR,
                       'task_state': None})
        with self.cells.db(cell0).session() as session:
            if instances.get(session, uuid) is None:
                instances.create(session, values)
                instances.add_fault(session, uuid, message, details)
        with self.api_db.session() as session:
            build_request = self._build_request(session, uuid)
            if build_request is not None:
                session.delete(build_request)
            session.execute(
                sa.update(api_models.InstanceMapping)
                .where(api_models.InstanceMapping.instance_uuid == uuid)
                .values(cell_id=cell0.id))


CELL0_UUID = cells_mod.CELL0_UUID
