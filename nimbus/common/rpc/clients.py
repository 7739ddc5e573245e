"""RPC clients and the serializer every client and server of Nimbus uses
(re-exported by :mod:`nimbus.common.rpc`).

A message costs each side about a millisecond of CPU on RabbitMQ
(``benchmarks/rpc_cpu_bench.py``), nearly all of it oslo.messaging, kombu
and py-amqp; what Nimbus adds is kept out of that path: the context is
sent as the few values a receiver reads, and a client's prepared call
contexts are made once.
"""

import oslo_messaging as messaging

from nimbus.common import context as nimbus_context


class Serializer(messaging.NoOpSerializer):
    """Payloads are plain JSON; the context becomes a RequestContext.

    The context travels as what a receiver makes its RequestContext of
    (:meth:`~nimbus.common.context.RequestContext.wire_dict`: user,
    project, roles, request ids, flags that are set), not oslo.context's
    full ``to_dict`` (17 keys, the auth token among them): every message
    of every daemon is encoded, packed and decoded with it."""

    def serialize_context(self, ctxt):
        wire = getattr(ctxt, 'wire_dict', None)
        return wire() if wire is not None else ctxt.to_dict()

    def deserialize_context(self, ctxt):
        return nimbus_context.RequestContext.from_dict(ctxt)


class _Client(messaging.RPCClient):
    """oslo.messaging's RPC client whose ``prepare`` is made once per set
    of overrides: the rpcapi modules prepare one per message (a version, a
    timeout, fanout), and the call context it makes holds nothing of a
    message (a call or cast only reads it), so the same one serves every
    thread."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._prepared = {}

    def prepare(self, **kwargs):
        try:
            key = tuple(sorted(kwargs.items()))
            prepared = self._prepared.get(key)
        except TypeError:  # an unhashable override: made each time
            return super().prepare(**kwargs)
        if prepared is None:
            prepared = super().prepare(**kwargs)
            if len(self._prepared) < 64:
                self._prepared[key] = prepared
        return prepared


def get_client(
    transport, topic, version, server=None, conf=None, version_cap=None
):
    target = messaging.Target(topic=topic, version=version, server=server)
    kwargs = {}
    if conf is not None:
        kwargs['timeout'] = conf.rpc.rpc_response_timeout
    return messaging.get_rpc_client(
        transport,
        target,
        client_cls=_Client,
        version_cap=version_cap,
        serializer=Serializer(),
        **kwargs,
    )


class HostClients:
    """The RPC API of a service with one server per host (the computes,
    the accelerator agents): a client per host, made when first used.
    Subclasses set ``topic`` and ``version``, and may cap the version
    (:meth:`_version_cap`)."""

    topic = None
    version = None

    def __init__(self, transport, conf=None):
        self._transport = transport
        self._conf = conf
        self._clients = {}

    def _version_cap(self):
        return None

    def _client(self, host):
        client = self._clients.get(host)
        if client is None:
            client = self._clients[host] = get_client(
                self._transport,
                self.topic,
                self.version,
                server=host,
                conf=self._conf,
                version_cap=self._version_cap(),
            )
        return client
