"""One RPC server for many server names: ``topic.<server>`` x N.

oslo.messaging gives every RPC server a listener of its own, and the
rabbit driver gives every listener a connection of its own (with a
heartbeat thread and a polling thread). A thousand simulated hosts would
hold a thousand connections and several thousand threads. Here one
oslo.messaging :class:`RPCServer` consumes every ``topic.<server>`` queue
on ONE connection, and a dispatcher keyed by server name hands each
message to the endpoints of the server it was addressed to. Messages are
processed on the server's one executor pool (``workers`` threads).

Servers can be added and removed while it runs: :meth:`MultiServer.remove`
cancels the consumer of that server's queue, so messages sent to it wait
in the queue (on RabbitMQ) as they would for a stopped host, and
:meth:`MultiServer.add` starts consuming it again.

Supported transports: ``rabbit://`` (oslo.messaging's AMQP driver on
kombu; the queue-level details are in :class:`_RabbitListener`) and
``inproc://``. The shared ``topic`` queue (no server) and the fanout queue
are not consumed: Nimbus addresses every message to a host.
"""

import functools
import threading

from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_messaging._drivers import amqpdriver
from oslo_messaging._drivers import base as driver_base
from oslo_messaging._drivers import common as driver_common
from oslo_messaging._drivers import impl_rabbit
from oslo_messaging.rpc import dispatcher as rpc_dispatcher
from oslo_messaging.rpc import server as rpc_server

from nimbus.common import rpc
from nimbus.common.rpc import executor as rpc_executor
from nimbus.messaging_internals import inproc

LOG = logging.getLogger(__name__)


class _RabbitListener(amqpdriver.RpcAMQPListener):
    """An AMQP RPC listener on one connection consuming many queues.

    Each ``topic.<server>`` queue gets a consumer whose callback tags the
    incoming message with the server name before oslo.messaging's own
    listener takes it. Consumers are declared (and cancelled) in the
    polling thread, the only thread that uses the connection's channel.
    """

    def __init__(self, driver, exchange, topic):
        conn = driver._get_connection(driver_common.PURPOSE_LISTEN)
        super().__init__(driver, conn)
        self._exchange = exchange
        self._topic = topic
        self._by_server = {}

    def _consumer(self, server):
        conn = self.conn.connection
        name = '%s.%s' % (self._topic, server)

        def callback(message):
            before = len(self.incoming)
            self(message)
            for incoming in self.incoming[before:]:
                incoming.nimbus_server = server

        return impl_rabbit.Consumer(
            exchange_name=self._exchange,
            queue_name=name,
            routing_key=name,
            type='topic',
            durable=conn.durable,
            exchange_auto_delete=conn.amqp_auto_delete,
            queue_auto_delete=conn.amqp_auto_delete,
            callback=callback,
            rabbit_ha_queues=conn.rabbit_ha_queues,
            enable_cancel_on_failover=conn.enable_cancel_on_failover,
            rabbit_quorum_queue=conn.rabbit_quorum_queue,
            rabbit_quorum_queue_config=conn.rabbit_quorum_queue_config,
        )

    def _in_poll_thread(self, func, timeout=60):
        """Run ``func`` in the thread that polls the connection (kombu
        is not thread safe): oslo.messaging's listener runs the tasks of
        its message operations handler there (acks, requeues) between
        two short ``consume`` rounds. Waits for it to have run."""
        done = threading.Event()
        errors = []

        def task():
            try:
                func()
            except Exception as exc:
                LOG.exception(
                    'Changing the consumers of %s failed', self._topic
                )
                errors.append(exc)
            finally:
                done.set()

        self._message_operations_handler.do(task)
        if not done.wait(timeout):
            LOG.warning(
                'The %s listener took over %ss to change its consumers',
                self._topic,
                timeout,
            )
        elif errors:
            raise errors[0]

    def declare(self, servers):
        """Declare the queues of ``servers`` without consuming them:
        from now on messages sent to them wait there (RabbitMQ drops a
        message whose queue does not exist yet)."""
        conn = self.conn.connection
        consumers = [self._consumer(s) for s in servers]

        def declare_all():
            with conn._connection_lock:
                for consumer in consumers:
                    conn.ensure(functools.partial(consumer.declare, conn))

        self._in_poll_thread(declare_all, timeout=300)

    def add(self, servers):
        """Declare and consume the queues of ``servers`` (from the next
        ``consume`` round of the polling thread)."""
        conn = self.conn.connection
        consumers = [
            (s, self._consumer(s)) for s in servers if s not in self._by_server
        ]

        def declare_all():
            for server, consumer in consumers:
                conn.declare_consumer(consumer)
                self._by_server[server] = consumer

        self._in_poll_thread(declare_all)

    def remove(self, servers):
        """Cancel the consumers of ``servers``: their messages stay in
        their queues."""
        conn = self.conn.connection

        def cancel_all():
            for server in servers:
                consumer = self._by_server.pop(server, None)
                if consumer is None:
                    continue
                tag = conn._consumers.pop(consumer, None)
                conn._active_tags.pop(consumer.queue_name, None)
                if tag is None:
                    continue
                if tag in conn._new_tags:
                    conn._new_tags.discard(tag)
                else:
                    with conn._connection_lock:
                        consumer.cancel(tag)

        self._in_poll_thread(cancel_all)


class _InProcListener(inproc.InProcListener):
    """The in-process bus's listener on a changing set of server queues."""

    def __init__(self, bus, exchange, topic):
        super().__init__(bus, [])
        self._exchange = exchange
        self._topic = topic

    def _key(self, server):
        return (self._exchange, self._topic, server)

    def add(self, servers):
        keys = [self._key(s) for s in servers]
        self._keys = list(self._keys) + [
            k for k in keys if k not in self._keys
        ]
        self._bus.subscribe(keys, self)
        self.wake()

    def declare(self, servers):
        """Nothing to do: the in-process bus keeps every message."""

    def remove(self, servers):
        gone = {self._key(s) for s in servers}
        self._keys = [k for k in self._keys if k not in gone]

    def _incoming(self, key, envelope):
        message = super()._incoming(key, envelope)
        message.nimbus_server = key[2]
        return message


class _Dispatcher:
    """Hands a message to the RPCDispatcher of the server it was sent to."""

    def __init__(self):
        self._dispatchers = {}

    def add(self, server, endpoints):
        # Wrapped as rpc.get_server wraps them: an expected exception
        # reaches the caller without an error and a traceback logged here.
        self._dispatchers[server] = rpc_dispatcher.RPCDispatcher(
            [rpc._RemoteEndpoint(e) for e in endpoints],
            rpc.Serializer(),
            messaging.ExplicitRPCAccessPolicy,
        )

    def remove(self, server):
        self._dispatchers.pop(server, None)

    def dispatch(self, incoming):
        server = getattr(incoming, 'nimbus_server', None)
        dispatcher = self._dispatchers.get(server)
        if dispatcher is None:
            LOG.warning(
                'Dropped %s for %s: not served here (any more)',
                incoming.message.get('method'),
                server,
            )
            return None
        return dispatcher.dispatch(incoming)


class _Server(rpc_server.RPCServer):
    def __init__(self, transport, target, dispatcher, listener):
        super().__init__(transport, target, dispatcher, executor='threading')
        rpc_executor.use_prompt_executor(self)
        self._multi_listener = listener

    def _create_listener(self):
        return driver_base.PollStyleListenerAdapter(
            self._multi_listener, 1, None
        )


class MultiServer:
    """Serve ``topic`` for many server names on one connection and one
    pool of ``workers`` threads.

    ``add(server, endpoints)`` before or after :meth:`start`; several at
    once with :meth:`add_many` (one broker round of declarations).
    """

    def __init__(self, transport, topic, version='1.0', workers=64):
        self.transport = transport
        self.topic = topic
        self.workers = workers
        driver = transport._driver
        exchange = transport._driver._default_exchange or 'openstack'
        if isinstance(driver, inproc.InProcDriver):
            self._listener = _InProcListener(driver._bus, exchange, topic)
        elif isinstance(driver, amqpdriver.AMQPDriverBase):
            self._listener = _RabbitListener(driver, exchange, topic)
        else:
            raise ValueError(
                '%s cannot serve many hosts on one connection'
                % type(driver).__name__
            )
        self._dispatcher = _Dispatcher()
        self._server = _Server(
            transport,
            messaging.Target(topic=topic, version=version),
            self._dispatcher,
            self._listener,
        )
        self._lock = threading.Lock()
        self._servers = set()

    @property
    def servers(self):
        return set(self._servers)

    def add(self, server, endpoints):
        self.add_many({server: endpoints})

    def add_many(self, endpoints_by_server):
        with self._lock:
            for server, endpoints in endpoints_by_server.items():
                self._dispatcher.add(server, endpoints)
            self._listener.add(list(endpoints_by_server))
            self._servers.update(endpoints_by_server)

    def declare(self, servers):
        """Create the queues of ``servers`` before they are served, so
        that nothing sent to them meanwhile is lost."""
        self._listener.declare(list(servers))

    def remove(self, server):
        """Stop consuming ``server``'s queue; a message already taken from
        it is dropped (the host is gone, as with ``kill -9``)."""
        with self._lock:
            self._listener.remove([server])
            self._dispatcher.remove(server)
            self._servers.discard(server)

    def start(self):
        self._server.start(override_pool_size=self.workers)
        return self

    def stop(self):
        self._server.stop()
        self._server.wait()
