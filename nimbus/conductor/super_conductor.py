"""The super conductor: schedules build requests and hands them to cells.

It works at the API level: it reads build requests from the API database,
asks the scheduler for a host and alternates per instance, creates each
instance in its cell's database and casts the build to the chosen host on
that cell's bus (that step is :mod:`.handoff`'s, which answers here and
never calls back). Instances that get no host are buried in cell0 with a
fault that says why (:mod:`.unplaced` words the faults of a multi-create's
instances that did not fit).
"""

from oslo_log import log as logging
import oslo_messaging as messaging

from nimbus.common import exception
from nimbus.common import instance_states as states
from nimbus.conductor import faults
from nimbus.conductor import handoff
from nimbus.conductor import leases
from nimbus.conductor import shelve
from nimbus.conductor import unplaced as unplaced_mod
from nimbus.db import build_requests
from nimbus.db import cell_instances as instances
from nimbus.db import instance_actions
from nimbus.db import instance_mappings

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
        # Step 17: the placed instances to their cells (it never calls
        # back here; see the module's docstring).
        self.handoff = handoff.Handoff(
            conf, api_db, cells, scheduler_api, placement, accelerator
        )

    @property
    def moves(self):
        """Unshelve and evacuate (:mod:`nimbus.conductor.shelve`)."""
        moves = getattr(self, '_moves', None)
        if moves is None:
            moves = self._moves = shelve.ShelveMoves(self)
        return moves

    def compute_api(self, cell):
        """The compute RPC API on ``cell``'s bus (the hand-off's)."""
        return self.handoff.compute_api(cell)

    def schedule_and_build_instances(self, ctxt, request_spec, instance_uuids):
        """The super conductor's steps of the scheduling workflow.

        Before them it leases the build requests (:mod:`.leases`).
        1. It gives the scheduler the request spec
           (``select_destinations``); the scheduler asks placement, filters,
           weighs, claims and picks alternates (steps 2-15).
        16. The answer: per instance, the selected host and its alternates
            in the same cell, each a Selection with its allocation request.
        17. Per instance it finds the selected host's cell, creates the
            instance there and casts the build, with the alternates, to the
            host on the cell's bus; the cell's conductor walks the
            alternates when the build fails (step 18).
        An instance that got no host is buried in cell0 with its fault.
        """
        lease, instance_uuids = leases.lease_build_requests(
            ctxt, self.api_db, self.placement, instance_uuids, self.conf, LOG
        )
        if not instance_uuids:
            return
        released = set()  # scheduling records whose claims we released
        try:
            # Steps 1 and 16.
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
        except Exception as exc:  # noqa: BLE001 - no server may stay in BUILD
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
        # Step 17: one instance at a time, or a multi-create's placed
        # instances in a few transactions (:mod:`.handoff`).
        unplaced, placed = [], []
        for index, uuid in enumerate(instance_uuids):
            host_list = selections[index] if index < len(selections) else []
            if host_list:
                placed.append((uuid, host_list))
            else:
                unplaced.append(uuid)
        if len(placed) > 1:
            self._build_many(ctxt, request_spec, placed, lease)
        else:
            for uuid, host_list in placed:
                self.build_one(ctxt, uuid, request_spec, host_list, lease)
        if unplaced:
            for uuid, message, details in unplaced_mod.Unplaced(
                self.conf, self.api_db, self.scheduler
            ).unplaced_faults(ctxt, request_spec, instance_uuids, unplaced):
                self.bury_in_cell0(ctxt, uuid, message, details, lease)

    def _build_many(self, ctxt, request_spec, placed, lease):
        """Step 17 for the placed instances of a multi-create, in a few
        transactions; one at a time when preparing the batch fails (an
        instance it left in its cell is used as it is)."""
        try:
            ready = self.handoff.prepare_many(
                ctxt, request_spec, placed, lease
            )
        except Exception:
            LOG.exception(
                'Handing %d instances to their cells in one batch failed; '
                'handing them one at a time',
                len(placed),
            )
            for uuid, host_list in placed:
                self.build_one(ctxt, uuid, request_spec, host_list, lease)
            return
        self.handoff.send_many(ctxt, request_spec, ready)

    def build_one(self, ctxt, uuid, request_spec, host_list, lease=None):
        """Step 17 for one instance; an error buries it in cell0 (its
        claim released)."""
        try:
            self.handoff.build_one(ctxt, uuid, request_spec, host_list, lease)
        except Exception as exc:
            LOG.exception('Handing %s to its cell failed', uuid)
            self.placement.remove_allocations(ctxt, uuid)
            self.bury_in_cell0(ctxt, uuid, 'Build failed.', str(exc), lease)

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
        for record_id, _uuid in found:
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

    def bury_in_cell0(self, ctxt, uuid, message, details, lease=None):
        """Create the instance in cell0, in ERROR, with a fault."""
        cell0 = self.cells.cell0()
        with self.api_db.session() as session:
            row = build_requests.get(session, uuid)
            if row is None or not leases.holds(session, uuid, lease):
                return
            build_request = build_requests.request_of(row)
        values = build_request.instance_values()
        values.update(
            {'uuid': uuid, 'vm_state': states.ERROR, 'task_state': None}
        )
        with self.cells.db(cell0).session() as session:
            if instances.get(session, uuid) is None:
                instances.create(session, values)
                instances.add_fault(session, uuid, message, details)
                instance_actions.start_created(
                    session, [values], ctxt.request_id
                )
        with self.api_db.session() as session:
            if not leases.finish(session, uuid, lease) and lease is not None:
                return
            instance_mappings.set_cell(session, uuid, cell0.id)
