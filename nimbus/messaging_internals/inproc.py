"""``inproc://``: an oslo.messaging driver that moves messages in memory.

Why not oslo.messaging's ``fake://``? Its listener sleeps 50 ms whenever a
poll finds nothing, so every RPC call costs about 50 ms. Here a listener
sleeps on a condition variable and is woken by the sender, so a call costs
what the dispatch costs (well under a millisecond).

It is a real driver: the RPC client, server, dispatcher, serializer and
executor above it are oslo.messaging's own, exactly as with ``rabbit://``.
What goes over the "wire" is JSON-encoded and decoded like on a broker, so a
payload that would not survive RabbitMQ does not survive here either, and
remote exceptions are serialised the way the AMQP drivers do it.

The virtual host of the URL picks the bus: ``inproc:///`` and
``inproc:///cell1`` are two separate brokers inside one process, the way
every cell has its own RabbitMQ vhost in production.
"""

import collections
import threading
import time

from oslo_messaging._drivers import base
from oslo_messaging._drivers import common as driver_common
from oslo_messaging import exceptions as om_exc
from oslo_serialization import jsonutils

# Notifications kept per queue while nobody consumes them.
NOTIFICATION_BACKLOG = 1000

_BUSES = {}
_BUSES_LOCK = threading.Lock()


def get_bus(virtual_host):
    """The process-wide bus for a virtual host (created on first use)."""
    with _BUSES_LOCK:
        bus = _BUSES.get(virtual_host)
        if bus is None:
            bus = _BUSES[virtual_host] = _Bus(virtual_host)
        return bus


def reset_buses():
    """Forget every bus: for tests that want a clean broker."""
    with _BUSES_LOCK:
        _BUSES.clear()


class _Queue:
    """A FIFO with the listeners that consume from it."""

    __slots__ = ('items', 'listeners')

    def __init__(self):
        self.items = collections.deque()
        self.listeners = []


class _Bus:
    """One broker: named queues, shared by every driver on the same vhost."""

    def __init__(self, name):
        self.name = name
        self.lock = threading.Lock()
        self.queues = {}

    def queue(self, key):
        q = self.queues.get(key)
        if q is None:
            q = self.queues[key] = _Queue()
        return q

    def subscribe(self, keys, listener):
        with self.lock:
            for key in keys:
                self.queue(key).listeners.append(listener)

    def unsubscribe(self, listener):
        with self.lock:
            for q in self.queues.values():
                if listener in q.listeners:
                    q.listeners.remove(listener)

    def publish(self, exchange, target, envelope, limit=None):
        """Route one message: server queue, fanout, or the shared topic.
        ``limit``: keep at most that many waiting messages in the queue
        (the oldest go): notifications nobody consumes must not grow the
        process without bound."""
        with self.lock:
            if target.fanout:
                keys = [
                    k
                    for k in self.queues
                    if k[0] == exchange
                    and k[1] == target.topic
                    and k[2] is not None
                ]
            elif target.server:
                keys = [(exchange, target.topic, target.server)]
            else:
                keys = [(exchange, target.topic, None)]
            woken = []
            for key in keys:
                q = self.queue(key)
                q.items.append(envelope)
                if limit is not None and len(q.items) > limit:
                    q.items.popleft()
                woken.extend(q.listeners)
        for listener in woken:
            listener.wake()

    def take(self, keys):
        """``(key, envelope)`` of the first message found, or None."""
        with self.lock:
            for key in keys:
                q = self.queues.get(key)
                if q is not None and q.items:
                    return key, q.items.popleft()
        return None


class _ReplyChannel:
    """Where the server puts its reply (and heartbeats) for one call."""

    def __init__(self):
        self._cond = threading.Condition()
        self._items = collections.deque()

    def put(self, item):
        with self._cond:
            self._items.append(item)
            self._cond.notify()

    def get(self, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._items:
                remaining = (
                    None if deadline is None else deadline - time.monotonic()
                )
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining)
            return self._items.popleft()


class InProcIncomingMessage(base.RpcIncomingMessage):
    def __init__(self, ctxt, message, reply_channel, client_timeout):
        super().__init__(ctxt, message)
        self._reply_channel = reply_channel
        self.client_timeout = client_timeout

    def reply(self, reply=None, failure=None):
        if self._reply_channel is None:
            return
        if failure is not None:
            failure = driver_common.serialize_remote_exception(failure)
        self._reply_channel.put(
            ('reply', jsonutils.dumps({'result': reply, 'failure': failure}))
        )

    def heartbeat(self):
        if self._reply_channel is not None:
            self._reply_channel.put(('heartbeat', None))

    def acknowledge(self):
        pass

    def requeue(self):
        pass


class InProcListener(base.PollStyleListener):
    """Consumes from a set of queues; woken by publishers."""

    def __init__(self, bus, keys):
        super().__init__()
        self._bus = bus
        self._keys = keys
        self._cond = threading.Condition()
        self._pending = 0
        self._stopped = False
        bus.subscribe(keys, self)

    def wake(self):
        with self._cond:
            self._pending += 1
            self._cond.notify()

    @base.batch_poll_helper
    def poll(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            taken = self._bus.take(self._keys)
            if taken is not None:
                return self._incoming(*taken)
            with self._cond:
                if self._stopped:
                    return None
                if self._pending:
                    self._pending = 0
                    continue
                remaining = (
                    None if deadline is None else deadline - time.monotonic()
                )
                if remaining is not None and remaining <= 0:
                    return None
                # Wake up now and then even without traffic so that a
                # stop() racing with an empty queue is always noticed.
                self._cond.wait(
                    1.0 if remaining is None else min(remaining, 1.0)
                )
                self._pending = 0

    def _incoming(self, key, envelope):
        ctxt, payload, reply_channel, client_timeout = envelope
        return InProcIncomingMessage(
            jsonutils.loads(ctxt),
            jsonutils.loads(payload),
            reply_channel,
            client_timeout,
        )

    def stop(self):
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def cleanup(self):
        self._bus.unsubscribe(self)


class InProcDriver(base.BaseDriver):
    """The oslo.messaging driver registered as the ``inproc`` transport."""

    def __init__(
        self, conf, url, default_exchange=None, allowed_remote_exmods=None
    ):
        super().__init__(conf, url, default_exchange, allowed_remote_exmods)
        self._bus = get_bus(url.virtual_host or '')

    def require_features(self, requeue=False):
        pass

    def _exchange(self, target):
        return target.exchange or self._default_exchange

    def send(
        self,
        target,
        ctxt,
        message,
        wait_for_reply=None,
        timeout=None,
        call_monitor_timeout=None,
        retry=None,
        transport_options=None,
    ):
        reply_channel = _ReplyChannel() if wait_for_reply else None
        envelope = (
            jsonutils.dumps(ctxt),
            jsonutils.dumps(message),
            reply_channel,
            call_monitor_timeout,
        )
        self._bus.publish(self._exchange(target), target, envelope)
        if not wait_for_reply:
            return None
        return self._wait(target, reply_channel, timeout, call_monitor_timeout)

    def _wait(self, target, channel, timeout, call_monitor_timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = None if deadline is None else deadline - time.monotonic()
            if call_monitor_timeout:
                wait = (
                    call_monitor_timeout
                    if wait is None
                    else min(wait, call_monitor_timeout)
                )
            if wait is not None and wait <= 0:
                item = None
            else:
                item = channel.get(wait)
            if item is None:
                raise om_exc.MessagingTimeout(
                    'Timed out waiting for a reply on topic %s' % target.topic
                )
            kind, body = item
            if kind == 'heartbeat':
                continue
            body = jsonutils.loads(body)
            if body['failure'] is not None:
                raise driver_common.deserialize_remote_exception(
                    body['failure'], self._allowed_remote_exmods
                )
            return body['result']

    def send_notification(self, target, ctxt, message, version, retry=None):
        envelope = (
            jsonutils.dumps(ctxt),
            jsonutils.dumps(message),
            None,
            None,
        )
        self._bus.publish(
            self._exchange(target),
            target,
            envelope,
            limit=NOTIFICATION_BACKLOG,
        )

    def listen(self, target, batch_size, batch_timeout):
        exchange = self._exchange(target)
        keys = [
            (exchange, target.topic, target.server),
            (exchange, target.topic, None),
        ]
        listener = InProcListener(self._bus, keys)
        return base.PollStyleListenerAdapter(
            listener, batch_size, batch_timeout
        )

    def listen_for_notifications(
        self, targets_and_priorities, pool, batch_size, batch_timeout
    ):
        keys = [
            (
                target.exchange or self._default_exchange,
                '%s.%s' % (target.topic, priority),
                None,
            )
            for target, priority in targets_and_priorities
        ]
        listener = InProcListener(self._bus, keys)
        return base.PollStyleListenerAdapter(
            listener, batch_size, batch_timeout
        )

    def cleanup(self):
        pass
