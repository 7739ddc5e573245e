"""What an instance the scheduler could not place is told, and what the
admins are told: the fault of each instance of a multi-create that did not
fit (with the scheduler's explanation, or a dry run's when the
explanation does not show what stopped it) and the ``failed`` scheduling
record of it (``GET /os-scheduler/records?instance_uuid=...``). The
wording itself is :mod:`nimbus.conductor.faults`'s; the super conductor
only decides when.
"""

from oslo_log import log as logging
from oslo_config import cfg

from nimbus.conductor import faults
from nimbus.db import scheduling_records

LOG = logging.getLogger(__name__)

# Rejected hosts kept in the admin's record of an unplaced instance.
RECORD_LIMIT = 1000


def read_records(api_db, request_id, uuids, outcome, column):
    """``[(record id, instance uuid, column)]`` of the scheduler's records
    with ``outcome`` for these instances of ``request_id``, in order; None
    when the API database cannot be read."""
    try:
        with api_db.session() as session:
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


class Unplaced:
    """The faults of the unplaced instances of a request; the super
    conductor buries each in cell0 with its own (under its schedule
    lease)."""

    def __init__(self, conf, api_db, scheduler):
        self.conf = conf
        self.api_db = api_db
        self.scheduler = scheduler

    def _sample_size(self):
        try:
            return int(self.conf.scheduler.explain_sample_size)
        except (AttributeError, cfg.Error):  # a conductor-only ConfigOpts
            return 10

    def unplaced_faults(self, ctxt, request_spec, instance_uuids, unplaced):
        """Between min_count and max_count: ``[(uuid, message, details)]``,
        the fault of each instance of ``unplaced`` (which did not fit),
        with the scheduler's explanation; admins get a record (``GET
        /os-scheduler/records?instance_uuid=...``) with every rejected
        host."""
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
        out = []
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
            out.append((uuid, message, details))
        return out

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

    def _recorded_failures(self, request_id, uuids):
        """The scheduler's ``failed`` records of these instances."""
        if not request_id or not uuids:
            return {}
        rows = (
            read_records(self.api_db, request_id, uuids, 'failed', 'detail')
            or []
        )
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
