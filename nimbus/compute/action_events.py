"""A compute host's reports of an instance action's events.

Guest actions, shelves and moves all record their steps (start, finish)
through the cell conductor the same way; a lost report is logged and never
fails the step it reports.
"""

import traceback

from oslo_log import log as logging
from oslo_utils import timeutils

from nimbus.common.objects import action_event as event_obj

LOG = logging.getLogger(__name__)


def record(
    conductor, host, ctxt, instance_uuid, request_id, event, phase, **more
):
    """Report ``event``'s ``phase`` of ``instance_uuid`` done on ``host``."""
    try:
        conductor.instance_action_event(
            ctxt,
            event_obj.ActionEvent(
                instance_uuid=instance_uuid,
                request_id=request_id,
                event=event,
                host=host,
                phase=phase,
                time=timeutils.utcnow().isoformat(),
                **more,
            ),
        )
    except Exception:
        LOG.warning(
            'Could not record %s %s of %s',
            event,
            phase,
            instance_uuid,
            exc_info=True,
        )


def error_fields(exc):
    """An error finish's ``traceback`` and ``details`` for ``exc``."""
    return {
        'traceback': ''.join(traceback.format_exception(exc)),
        'details': str(exc)[:255],
    }
