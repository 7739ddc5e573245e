"""The one retry of the cell conductor's calls: a call whose reply was lost
(a broker restart drops replies in flight) is sent again, up to five
times with a growing wait. Only for calls that are safe to repeat (every
call of the cell conductor; see :mod:`nimbus.conductor.rpcapi`)."""

import oslo_messaging as messaging
from oslo_log import log as logging
import tenacity

LOG = logging.getLogger(__name__)


def _log_retry(state):
    LOG.warning(
        'No reply from the cell conductor (%s); retrying',
        state.outcome.exception(),
    )


lost_reply = tenacity.retry(
    retry=tenacity.retry_if_exception_type(messaging.MessagingTimeout),
    stop=tenacity.stop_after_attempt(5),
    wait=tenacity.wait_exponential(multiplier=0.5, max=10),
    before_sleep=_log_retry,
    reraise=True,
)
