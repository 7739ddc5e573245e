"""The decision stream fanned out to open dashboards.

One :class:`DecisionHub` per API process holds one notification listener on
the scheduler's bus (started when the first page subscribes, in a listener
pool of its own so that ``nimbus decisions --follow`` tails still get every
decision) and hands each decision to every subscriber's bounded queue. A
subscriber whose queue is full (a page that does not read) is dropped: its
stream ends and the browser reconnects. The number of open streams is
capped, because each holds one of the API server's worker threads.
"""

import os
import queue
import socket
import threading

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class TooManyStreams(Exception):
    """Every stream slot is taken."""


class Subscription:
    """One page's queue. ``get(timeout)`` returns a decision, or None after
    ``timeout`` seconds; ``dropped`` is set once the hub let it go."""

    def __init__(self, hub, size):
        self.hub = hub
        self.queue = queue.Queue(maxsize=size)
        self.dropped = threading.Event()

    def offer(self, payload):
        try:
            self.queue.put_nowait(payload)
            return True
        except queue.Full:
            return False

    def get(self, timeout):
        try:
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self):
        self.hub.unsubscribe(self)

    def drop(self):
        """Mark it dropped and wake a reader waiting in :meth:`get`."""
        self.dropped.set()
        try:
            self.queue.put_nowait(None)
        except queue.Full:  # the reader is not waiting then
            pass


class DecisionHub:
    """Fan decisions out to subscribers.

    ``listen(callback)`` starts the bus listener (an object with ``stop()``
    and ``wait()``), called once on the first subscription; by default
    :func:`nimbus.scheduler.notifications.listen` on ``transport``.
    ``queue_size``: decisions a page may lag behind before it is dropped;
    ``max_streams``: open streams at once (more: :class:`TooManyStreams`).
    """

    def __init__(
        self,
        transport=None,
        listen=None,
        queue_size=100,
        max_streams=8,
        recent=50,
    ):
        self.transport = transport
        self._listen = listen or self._bus_listener
        self.queue_size = queue_size
        self.max_streams = max_streams
        self._subs = set()
        self._lock = threading.Lock()
        self._listener = None
        self._stopped = False
        self.recent = []
        self.recent_size = recent
        self.delivered = 0
        self.dropped = 0

    def _bus_listener(self, callback):
        from nimbus.scheduler import notifications

        if self.transport is None:
            raise RuntimeError(
                'no notification transport for the decision stream'
            )
        pool = 'nimbus-dashboard-%s-%d' % (socket.gethostname(), os.getpid())
        return notifications.listen(self.transport, callback, pool=pool)

    @property
    def subscribers(self):
        with self._lock:
            return len(self._subs)

    def subscribe(self):
        """A new :class:`Subscription`; starts the listener if needed."""
        with self._lock:
            if self._stopped:
                raise TooManyStreams('the API is stopping')
            if len(self._subs) >= self.max_streams:
                raise TooManyStreams(
                    'All %d dashboard event streams are in use.'
                    % self.max_streams
                )
            sub = Subscription(self, self.queue_size)
            self._subs.add(sub)
            start = self._listener is None
            if start:
                self._listener = self._listen(self.publish)
            return sub

    def unsubscribe(self, sub):
        with self._lock:
            self._subs.discard(sub)

    def publish(self, payload):
        """Hand ``payload`` to every subscriber; drop the ones that lag."""
        with self._lock:
            self.recent.append(payload)
            del self.recent[: -self.recent_size]
            subs = list(self._subs)
        for sub in subs:
            if sub.offer(payload):
                self.delivered += 1
                continue
            LOG.info(
                'dashboard: dropping an event stream %d decisions behind',
                sub.queue.qsize(),
            )
            self.dropped += 1
            self.unsubscribe(sub)
            sub.drop()

    def latest(self):
        with self._lock:
            return list(self.recent)

    def stop(self):
        with self._lock:
            self._stopped = True
            listener, self._listener = self._listener, None
            subs, self._subs = list(self._subs), set()
        for sub in subs:
            sub.drop()
        if listener is not None:
            listener.stop()
            listener.wait()
