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
from nimbus.db import build_requests
from nimbus.db import cell_instances as instances
from nimbus.db import scheduling_records
from nimbus.conductor import zones
from nimbus.db.api import models as api_models

LOG = logging.getLogger(__name__)

# Rejected hosts kept in the admin's record of an unplaced instance.
RECORD_LIMIT = 1000


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
                self.bury_in_cell0(ctxt, uuid, message, reason)
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
                )
            return
        unplaced = []
        for index, uuid in enumerate(instance_uuids):
            host_list = selections[index] if index < len(selections) else []
            if not host_list:
                unplaced.append(uuid)
                continue
            try:
                self._build_in_cell(ctxt, uuid, request_spec, host_list)
            except Exception as exc:
                LOG.exception('Handing %s to its cell failed', uuid)
                self.placement.remove_allocations(ctxt, uuid)
                self.bury_in_cell0(ctxt, uuid, 'Build failed.', str(exc))
        if unplaced:
            self._bury_unplaced(ctxt, request_spec, instance_uuids, unplaced)

    # -- instances a multi-create could not place --------------------------

    def _sample_size(self):
        try:
            return int(self.conf.scheduler.explain_sample_size)
        except Exception:  # a conductor-only ConfigOpts
            return 10

    def _bury_unplaced(self, ctxt, request_spec, instance_uuids, unplaced):
        """Between min_count and max_count: the instances that did not fit
        get a fault with the scheduler's explanation, and admins a record
        (``GET /os-scheduler/records?instance_uuid=...``) with every
        rejected host."""
        requested = len(instance_uuids)
        placed = requested - len(unplaced)
        head = (
            'The scheduler placed %d of the %d instances of this request '
            '(min_count %s); this one did not fit.'
            % (placed, requested, request_spec.min_count)
        )
        found = self._unplaced_explanations(
            ctxt, request_spec, unplaced, placed, requested
        )
        for uuid in unplaced:
            explanation, reason = found.get(uuid, (None, None))
            if explanation is None:
                message = faults.fault_summary(None, placed, requested, reason)
                details = head if not reason else '%s %s' % (head, reason)
            else:
                explanation = dict(
                    explanation,
                    placed=placed,
                    requested=requested,
                    min_count=request_spec.min_count,
                )
                message = faults.fault_summary(
                    explanation, placed, requested, reason
                )
                why = (
                    'Why'
                    if explanation.get('source') == 'scheduler'
                    else 'Why another instance does not fit now'
                )
                details = '%s%s %s: %s' % (
                    head,
                    ' %s.' % reason if reason else '',
                    why,
                    faults.explanation_text(explanation, self._sample_size()),
                )
            self.bury_in_cell0(ctxt, uuid, message, details)

    def _unplaced_explanations(
        self, ctxt, request_spec, unplaced, placed, requested
    ):
        """``{uuid: (explanation or None, specific reason or None)}``.

        The scheduler records a ``failed`` record per unplaced instance
        (its explanation, and ``message`` the instance's own reason, e.g. a
        consumer generation conflict). When that explanation does not show
        what stopped the instance (the filters that re-run as a request
        progresses, such as anti-affinity, are not in its funnel), a dry
        run of one more instance of the request against the state the
        claims left gives placement's answer, each filter's in/out and the
        rejected hosts; it is recorded for admins too."""
        recorded = self._recorded_failures(request_spec.request_id, unplaced)
        out, missing = {}, []
        for uuid in unplaced:
            detail = recorded.get(uuid)
            reason = faults.specific_reason(detail)
            if detail is not None and (reason or faults.explains(detail)):
                out[uuid] = (dict(detail, source='scheduler'), reason)
            else:
                out[uuid] = (None, reason)
                missing.append(uuid)
        if missing:
            dry = self._dry_run_explanation(ctxt, request_spec)
            if dry is not None:
                for uuid in missing:
                    out[uuid] = (dry, out[uuid][1])
                self._record_unplaced(
                    request_spec,
                    missing,
                    dict(dry, placed=placed, requested=requested),
                )
        return out

    def _dry_run_explanation(self, ctxt, request_spec):
        # The group's hosts are recomputed by the scheduler from its host
        # states, which already hold the instances of this request it
        # placed.
        try:
            result = self.scheduler.dry_run(ctxt, request_spec.for_one_more())
        except Exception:
            LOG.warning(
                'Could not ask the scheduler why the rest of %s did not fit',
                request_spec.request_id,
                exc_info=True,
            )
            return None
        if not isinstance(result, dict):
            return None
        keys = (
            'placement_candidates',
            'placement_query',
            'pre_filters',
            'filters',
            'rejected',
        )
        out = {k: result.get(k) for k in keys}
        out['source'] = 'dry run after the claims of the placed instances'
        return out

    def _records(self, request_id, uuids, outcome, column):
        """``[(record id, instance uuid, column)]`` of the scheduler's
        records with ``outcome`` for these instances of ``request_id``, in
        order; None when the API database cannot be read."""
        try:
            with self.api_db.session() as session:
                return scheduling_records.of_request(
                    session, request_id, uuids, outcome, column
                )
        except Exception:
            LOG.warning(
                'Could not read the scheduling records of %s',
                request_id,
                exc_info=True,
            )
            return None

    def _recorded_failures(self, request_id, uuids):
        """The scheduler's ``failed`` records of these instances."""
        if not request_id or not uuids:
            return {}
        rows = self._records(request_id, uuids, 'failed', 'detail') or []
        return {
            uuid: detail
            for _rid, uuid, detail in rows
            if isinstance(detail, dict)
        }

    def _record_unplaced(self, request_spec, unplaced, explanation):
        detail = dict(explanation)
        detail['rejected'] = list(detail.get('rejected') or [])[:RECORD_LIMIT]
        detail['min_count'] = request_spec.min_count
        detail['message'] = faults.fault_summary(detail)
        try:
            with self.api_db.session() as session:
                scheduling_records.add(
                    session,
                    request_spec.request_id or 'unknown',
                    unplaced,
                    'failed',
                    detail,
                )
        except Exception:  # the fault still says why
            LOG.warning(
                'Could not record why %s did not fit', unplaced, exc_info=True
            )

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
        rows = self._records(request_id, instance_uuids, 'scheduled', 'id')
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

    def _build_in_cell(self, ctxt, uuid, request_spec, host_list):
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
            if not build_requests.delete(session, [uuid]):
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

    def bury_in_cell0(self, ctxt, uuid, message, details):
        """Create the instance in cell0, in ERROR, with a fault."""
        cell0 = self.cells.cell0()
        with self.api_db.session() as session:
            build_request = self._build_request(session, uuid)
            if build_request is None:
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
            build_requests.delete(session, [uuid])
            session.execute(
                sa.update(api_models.InstanceMapping)
                .where(api_models.InstanceMapping.instance_uuid == uuid)
                .values(cell_id=cell0.id)
            )


CELL0_UUID = cells_mod.CELL0_UUID
