"""The in-process oslo.messaging driver behaves like a broker."""

import threading
import time

import oslo_messaging as messaging
import pytest

from nimbus.common import config
from nimbus.common import context
from nimbus.common import exception
from nimbus.common import rpc
from nimbus.messaging_internals import inproc


class Endpoint:
    def __init__(self):
        self.seen = []
        self.event = threading.Event()

    @rpc.expose()
    def echo(self, ctxt, value):
        return {
            'value': value,
            'request_id': ctxt.request_id,
            'user': ctxt.user_id,
        }

    @rpc.expose()
    def fail(self, ctxt):
        raise exception.NoValidHost(reason='nothing fits')

    @rpc.expose()
    def slow(self, ctxt, seconds):
        time.sleep(seconds)
        return 'done'

    @rpc.expose(cast=True)
    def note(self, ctxt, value):
        self.seen.append(value)
        self.event.set()


@pytest.fixture
def bus(request):
    conf = config.build_conf([])
    url = 'inproc:///unit-%s' % request.node.name
    transport = rpc.get_transport(conf, url)
    servers = []

    def serve(endpoint, topic='t', server='s1'):
        srv = rpc.get_server(transport, topic, [endpoint], server)
        srv.start()
        servers.append(srv)
        return srv

    yield conf, transport, serve
    for srv in servers:
        srv.stop()
        srv.wait()
    inproc.reset_buses()


def test_call_carries_context_and_json_payload(bus):
    conf, transport, serve = bus
    serve(Endpoint())
    client = rpc.get_client(transport, 't', '1.0', conf=conf)
    ctxt = context.RequestContext(user_id='u1', project_id='p1')
    reply = client.call(ctxt, 'echo', value={'a': [1, 2]})
    assert reply == {
        'value': {'a': [1, 2]},
        'request_id': ctxt.request_id,
        'user': 'u1',
    }


def test_remote_exception_arrives_as_the_same_class(bus):
    conf, transport, serve = bus
    serve(Endpoint())
    client = rpc.get_client(transport, 't', '1.0', conf=conf)
    with pytest.raises(exception.NoValidHost) as info:
        client.call(context.get_admin_context(), 'fail')
    assert 'nothing fits' in str(info.value)


def test_payload_that_is_not_json_is_refused_like_on_a_broker(bus):
    conf, transport, serve = bus
    serve(Endpoint())
    client = rpc.get_client(transport, 't', '1.0', conf=conf)
    with pytest.raises(ValueError, match='to primitive'):
        client.call(context.get_admin_context(), 'echo', value=object())


def test_cast_is_delivered_and_server_targeting_works(bus):
    conf, transport, serve = bus
    one, two = Endpoint(), Endpoint()
    serve(one, server='host-a')
    serve(two, server='host-b')
    client = rpc.get_client(transport, 't', '1.0', server='host-b', conf=conf)
    client.cast(context.get_admin_context(), 'note', value=7)
    assert two.event.wait(5)
    assert two.seen == [7] and one.seen == []


def test_vhosts_are_separate_buses(bus):
    conf, transport, serve = bus
    serve(Endpoint())
    other = rpc.get_transport(conf, 'inproc:///some-other-vhost')
    client = rpc.get_client(other, 't', '1.0')
    with pytest.raises(messaging.MessagingTimeout):
        client.prepare(timeout=0.3).call(
            context.get_admin_context(), 'echo', value=1
        )


def test_timeout_without_a_server(bus):
    conf, transport, serve = bus
    client = rpc.get_client(transport, 'nobody', '1.0')
    with pytest.raises(messaging.MessagingTimeout):
        client.prepare(timeout=0.2).call(
            context.get_admin_context(), 'echo', value=1
        )


@pytest.mark.slow
def test_heartbeats_keep_a_long_call_alive(bus):
    conf, transport, serve = bus
    serve(Endpoint())
    client = rpc.get_client(transport, 't', '1.0', conf=conf)
    # The call takes 3 s but the monitor window is 2 s: only the server's
    # heartbeats (every 1 s) keep it alive.
    result = client.prepare(timeout=30, call_monitor_timeout=2).call(
        context.get_admin_context(), 'slow', seconds=3
    )
    assert result == 'done'


def test_missing_heartbeats_fail_the_call():
    conf = config.build_conf([])
    transport = rpc.get_transport(conf, 'inproc:///silent')
    # Nobody listens, so nobody heartbeats: the monitor window expires long
    # before the overall timeout.
    client = rpc.get_client(transport, 't', '1.0')
    start = time.monotonic()
    with pytest.raises(messaging.MessagingTimeout):
        client.prepare(timeout=30, call_monitor_timeout=0.5).call(
            context.get_admin_context(), 'slow', seconds=1
        )
    assert time.monotonic() - start < 10
    inproc.reset_buses()


def test_competing_consumers_share_a_topic(bus):
    conf, transport, serve = bus
    endpoints = [Endpoint(), Endpoint()]
    for index, endpoint in enumerate(endpoints):
        serve(endpoint, server='w%d' % index)
    client = rpc.get_client(transport, 't', '1.0', conf=conf)
    for i in range(20):
        client.call(context.get_admin_context(), 'note', value=i)
    seen = sorted(endpoints[0].seen + endpoints[1].seen)
    assert seen == list(range(20))
