"""The super conductor's recovery pass: what a dead process left behind is
finished without a person.

Every ``[conductor] recovery_interval`` seconds, and once at the super
conductor's start, the pass runs the consistency audit
(:mod:`nimbus.conductor.audit`, the same detector as ``nimbus-manage
audit``) and acts on what it found:

- ``unscheduled_build_request``: a build request in no cell whose
  schedule lease expired, or that nobody leased within
  ``[conductor] build_request_timeout`` of its creation (a super
  conductor was killed with its message taken). It is scheduled again
  from its stored request spec, as a request of one instance; taking the
  lease over (:mod:`nimbus.conductor.leases`) releases what the dead
  worker may have claimed, and a worker still under way elsewhere then
  commits nothing.
- ``stuck_move``: a resize or cold migrate still waiting for its
  scheduling (``resize_prep``) past the build request timeout is undone
  (:mod:`nimbus.conductor.move_recovery`).
- cross-cell moves (:mod:`nimbus.conductor.cross_cell_recovery`): one
  a dead super conductor left in a step is undone (before its switch) or
  left in VERIFY_RESIZE (after it), one it left in its confirm or
  revert is confirmed or reverted; one past ``[DEFAULT]
  resize_confirm_window`` in VERIFY_RESIZE is confirmed.
- the kinds the audit heals (orphan and leftover allocations, stale build
  requests, orphan ARQs, what a half-done move left in placement):
  healed, each re-checked first.

Builds stuck in a cell are the cell conductor's (its build check,
:mod:`nimbus.conductor.build_check`). Each action logs one line.
"""

from oslo_log import log as logging
from oslo_utils import uuidutils

from nimbus.common.objects import request_spec as spec_obj
from nimbus.conductor import audit
from nimbus.conductor import cross_cell_recovery
from nimbus.conductor import move_recovery
from nimbus.db import request_specs

LOG = logging.getLogger(__name__)

REDRIVE = 'unscheduled_build_request'


class Recovery:
    """``auditor``: a :class:`nimbus.conductor.audit.Auditor` (with the
    build request timeout); ``conductor``: the super conductor whose
    ``schedule_and_build_instances`` schedules a build request again."""

    def __init__(self, auditor, conductor):
        self.auditor = auditor
        self.conductor = conductor

    def run(self, ctxt, now=None):
        """One pass; ``{kind: count}`` of what it acted on, or None when
        a source could not be read."""
        acted = self._cross_cell(ctxt)
        try:
            snap = self.auditor.gather(ctxt)
        except audit.AuditError as exc:
            LOG.warning('recovery: could not run: %s', exc)
            return None
        found = self.auditor.check(snap, now)
        for item in found:
            if item.kind == move_recovery.KIND:
                self._undo_move(ctxt, item, acted)
                continue
            if item.kind != REDRIVE:
                continue
            try:
                if self._redrive(ctxt, item):
                    acted[REDRIVE] = acted.get(REDRIVE, 0) + 1
            except Exception:
                LOG.exception(
                    'recovery: scheduling build request %s again failed',
                    item.uuid,
                )
        healable = [d for d in found if d.healable]
        if healable:
            self.auditor.heal(ctxt, audit.Report(healable, {}))
        for item in healable:
            if item.healed:
                LOG.warning(
                    'recovery: healed %s %s (%s)',
                    item.kind,
                    item.uuid,
                    item.detail,
                )
                acted[item.kind] = acted.get(item.kind, 0) + 1
            else:
                LOG.info(
                    'recovery: left %s %s alone: %s',
                    item.kind,
                    item.uuid,
                    item.heal_error,
                )
        return acted

    def _cross_cell(self, ctxt):
        """The cross-cell moves a dead super conductor left in a step,
        and those past the confirm window
        (:mod:`nimbus.conductor.cross_cell_recovery`)."""
        acted = {}
        conductor = self.conductor
        try:
            timeout = (
                self.auditor.build_request_timeout
                or conductor.conf.conductor.build_request_timeout
            )
            settled = cross_cell_recovery.settle_interrupted(
                conductor, ctxt, timeout
            )
            settled.update(
                cross_cell_recovery.settle_ends(conductor, ctxt, timeout)
            )
            for kind, count in settled.items():
                if count:
                    acted['cross_cell_move_' + kind] = count
            confirmed = cross_cell_recovery.auto_confirm(
                conductor,
                ctxt,
                getattr(conductor.conf, 'resize_confirm_window', 0),
            )
            if confirmed:
                acted['cross_cell_auto_confirm'] = confirmed
        except Exception:
            LOG.exception('recovery: settling cross-cell moves failed')
        return acted

    def _undo_move(self, ctxt, item, acted):
        try:
            if move_recovery.undo_stuck(
                self.conductor, ctxt, item, self.auditor.build_request_timeout
            ):
                acted[item.kind] = acted.get(item.kind, 0) + 1
        except Exception:
            LOG.exception('recovery: undoing the move of %s failed', item.uuid)

    def _request_spec(self, uuid):
        with self.auditor.api_db.session() as session:
            return request_specs.get(session, uuid)

    def _redrive(self, ctxt, item):
        uuid = item.uuid
        spec = self._request_spec(uuid)
        if not isinstance(spec, dict) or not isinstance(
            spec.get('flavor'), dict
        ):
            LOG.warning(
                'recovery: build request %s is %s but has no request spec'
                '; it stays for nimbus-manage audit',
                uuid,
                item.detail,
            )
            return False
        spec = spec_obj.RequestSpec.from_primitive(
            dict(
                spec,
                instance_uuids=[uuid],
                num_instances=1,
                min_count=1,
                # Its own scheduling records, apart from the lost request's.
                request_id='req-' + uuidutils.generate_uuid(),
            )
        )
        LOG.warning(
            'recovery: build request %s is %s; scheduling it again',
            uuid,
            item.detail,
        )
        self.conductor.schedule_and_build_instances(ctxt, spec, [uuid])
        return True
