"""Binding accelerator requests, asynchronously and durably.

``PATCH /v2/accelerator_requests`` only records the intent (state
BindStarted with hostname, device provider and instance, see
:func:`nimbus.accelerator.objects.arq.start_binds`) and answers 202. The
:class:`Binder`, a worker thread of the service process, then for each
BindStarted ARQ (those a restart left included):

1. claims a free attach handle of the deployable whose ``rp_uuid`` is the
   ARQ's ``device_rp_uuid`` (or the one it already held before a restart);
2. asks the host's agent to ``program`` it (``agent.program(ctxt, host,
   arq)``; an exception, such as the agent's ``ProgrammingFailed``, is a
   failed bind);
3. moves the ARQ to Bound or BindFailed by compare-and-swap, recording
   the ``accelerator-request-bound`` event in that same commit;
4. only then posts the event to nimbus-api. An event nimbus-api cannot take
   yet (422, 404, 5xx, unreachable, or no endpoint configured) is retried
   with exponential backoff, its next attempt time stored on the row, so it
   survives restarts; it is dropped only when its ARQ is unbound or
   deleted.

If the ARQ was unbound or deleted while its device was being programmed,
the compare-and-swap fails and the binder frees the handle and asks the
agent to ``release`` it.
"""

import datetime
import re
import threading

from oslo_log import log as logging
import oslo_messaging

from nimbus.accelerator import contracts
from nimbus.accelerator import states
from nimbus.accelerator.objects import arq as arq_obj
from nimbus.accelerator.objects import base
from nimbus.accelerator.objects import device as device_obj
from nimbus.common import context as nimbus_context
from nimbus.common import exception

LOG = logging.getLogger(__name__)


def _agent_arq(arq, handle):
    """The agent's ``arq``: an AgentArq contract's primitive."""
    return contracts.AgentArq.of(arq, handle).to_primitive()


# A file path a message may quote (a driver's error, a remote frame).
_PATH = re.compile(r'(?:[A-Za-z]:)?(?:/[\w.@+-]+){2,}/?')


def failure_reason(exc, arq, handle):
    """What a failed bind says, for the ARQ and the server's fault: what
    failed and on which host, in one line, without the remote traceback
    oslo.messaging appends to an agent's exception nor any file path of
    either side (those stay in the logs)."""
    host = arq['hostname']
    if isinstance(exc, oslo_messaging.MessagingTimeout):
        detail = 'the accelerator agent on %s did not answer in time' % host
    elif isinstance(exc, oslo_messaging.MessageDeliveryFailure):
        detail = 'the accelerator agent on %s could not be reached' % host
    else:
        lines = [
            line.strip()
            for line in str(exc).splitlines()
            if line.strip() and not line.strip().startswith('Traceback')
        ]
        kind = type(exc).__name__.removesuffix('_Remote')
        detail = lines[0] if lines else kind
        if not isinstance(
            exc, (exception.NimbusException, oslo_messaging.RemoteError)
        ):
            detail = '%s: %s' % (kind, detail)
        detail = _PATH.sub('<path>', detail)[:500]
    if host in detail:
        return detail
    return 'Programming attach handle %s on %s failed: %s' % (
        handle['uuid'],
        host,
        detail,
    )


class Binder:
    """``Binder(adb, agent, events, poll_interval=1.0, retry_initial=1.0,
    retry_max=60.0, clock=None)``.

    ``agent`` has ``program(ctxt, host, arq)`` and ``release(ctxt, host,
    arq)`` (the agent's RPC API); ``events`` has ``send(arq_uuid,
    server_uuid, status) -> (delivered, reason)`` (a
    :class:`~nimbus.accelerator.compute_events.ComputeEvents`), or is None
    while nimbus-api is not configured (events then stay pending).
    ``clock()`` returns naive UTC now (tests move it forward to make a
    retry due). :meth:`run_once` does one pass; :meth:`start` runs passes
    in a thread until :meth:`stop`, woken early by :meth:`wake`.
    """

    def __init__(
        self,
        adb,
        agent,
        events,
        poll_interval=1.0,
        retry_initial=1.0,
        retry_max=60.0,
        clock=None,
    ):
        self.adb = adb
        self.agent = agent
        self.events = events
        self.poll_interval = poll_interval
        self.retry_initial = retry_initial
        self.retry_max = retry_max
        self.clock = clock or base.utcnow
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = None

    # --- the worker thread -------------------------------------------------

    def start(self):
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._loop, daemon=True, name='arq-binder'
        )
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def wake(self):
        """A bind was recorded: look now rather than at the next poll."""
        self._wake.set()

    def _loop(self):
        while not self._stop.is_set():
            self._wake.clear()
            try:
                busy = self.run_once()
            except Exception:
                LOG.exception('Accelerator binder pass failed')
                busy = False
            if not busy:
                self._wake.wait(self.poll_interval)

    # --- one pass ----------------------------------------------------------

    def run_once(self):
        """Bind every pending ARQ, then send every due event. True when
        there was anything to do (the thread then looks again at once)."""
        binds = arq_obj.pending_binds(self.adb)
        for arq in binds:
            self.bind(arq)
        due = arq_obj.due_events(self.adb, self.clock())
        for arq in due:
            self.send_event(arq)
        return bool(binds)

    def bind(self, arq):
        """Program one BindStarted ARQ and settle its state."""
        ctxt = nimbus_context.RequestContext(overwrite=False)
        try:
            handle = arq_obj.claim_handle(self.adb, arq)
        except arq_obj.NotFound:
            return  # unbound or deleted meanwhile: nothing to do
        if handle is None:
            self._settle(
                arq,
                None,
                'no free attach handle on the device of '
                'resource provider %s' % arq['device_rp_uuid'],
            )
            return
        try:
            self.agent.program(ctxt, arq['hostname'], _agent_arq(arq, handle))
        except Exception as exc:  # noqa: BLE001 - a driver's failure is the bind's
            reason = failure_reason(exc, arq, handle)
            LOG.warning(
                'Programming %s for accelerator request %s on %s failed: %s',
                handle['uuid'],
                arq['uuid'],
                arq['hostname'],
                exc,
            )
            self._settle(arq, None, reason)
            return
        if not self._settle(arq, handle, None):
            if self._settled_elsewhere(arq):
                return
            LOG.info(
                'Accelerator request %s left BindStarted while its '
                'device was programmed; releasing it',
                arq['uuid'],
            )
            self.adb.write(device_obj.release_handles, arq['uuid'])
            try:
                self.agent.release(
                    ctxt, arq['hostname'], _agent_arq(arq, handle)
                )
            except Exception:
                LOG.exception(
                    'Releasing %s on %s failed',
                    handle['uuid'],
                    arq['hostname'],
                )

    def _settled_elsewhere(self, arq):
        """Whether another binder (another service process) settled this
        same binding meanwhile: then the handle is its to keep."""
        try:
            current = arq_obj.get(self.adb, arq['uuid'])
        except arq_obj.NotFound:
            return False
        return (
            current['state'] in states.RESOLVED
            and current['instance_uuid'] == arq['instance_uuid']
            and current['device_rp_uuid'] == arq['device_rp_uuid']
        )

    def _settle(self, arq, handle, reason):
        done = arq_obj.finish_bind(self.adb, arq, handle, reason)
        if not done:
            return False
        LOG.info(
            'Accelerator request %s %s',
            arq['uuid'],
            'bound' if reason is None else 'failed: %s' % reason,
        )
        try:
            current = arq_obj.get(self.adb, arq['uuid'])
        except arq_obj.NotFound:
            return True
        if current['event_pending']:
            self.send_event(current)
        return True

    def send_event(self, arq):
        """Post the ARQ's pending event; on failure schedule a retry."""
        if arq['state'] not in states.RESOLVED or not arq['instance_uuid']:
            return
        if self.events is None:
            delivered, reason = False, '[compute_client] endpoint is not set'
        else:
            delivered, reason = self.events.send(
                arq['uuid'], arq['instance_uuid'], arq['event_status']
            )
        if delivered:
            arq_obj.event_delivered(self.adb, arq)
            LOG.info(
                'Event accelerator-request-bound (%s) of %s delivered '
                'for instance %s',
                arq['event_status'],
                arq['uuid'],
                arq['instance_uuid'],
            )
            return
        attempts = arq['event_attempts'] + 1
        delay = min(
            self.retry_max, self.retry_initial * (2 ** min(attempts - 1, 30))
        )
        next_at = self.clock() + datetime.timedelta(seconds=delay)
        arq_obj.event_retry_at(self.adb, arq, next_at)
        LOG.warning(
            'Event accelerator-request-bound of %s for instance %s '
            'not delivered (attempt %d: %s); next attempt in %.1f s',
            arq['uuid'],
            arq['instance_uuid'],
            attempts,
            reason,
            delay,
        )
