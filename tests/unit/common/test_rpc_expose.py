"""nimbus.common.rpc.expose: only exposed methods answer, and a malformed
message is refused (call) or dropped (cast) while the server keeps
serving."""

import re
import threading

import oslo_messaging as messaging
import pytest

from nimbus.common import config
from nimbus.common import context
from nimbus.common import rpc
from nimbus.common.objects import base as objects_base
from nimbus.messaging_internals import inproc


class Endpoint:
    def __init__(self):
        self.seen = []
        self.cast_done = threading.Event()

    @rpc.expose(
        required=('host',),
        types={'host': str, 'count': int, 'tags': (list, type(None))},
    )
    def lookup(self, ctxt, host, count=1, tags=None):
        if host == 'deeper-check-fails':
            raise rpc.InvalidMessage('lookup: no such kind of host')
        return {'host': host, 'count': count}

    @rpc.expose(cast=True, required=('value',), types={'value': dict})
    def note(self, ctxt, value):
        if value.get('bad'):
            raise rpc.InvalidMessage('note: bad value')
        self.seen.append(value)
        self.cast_done.set()

    @rpc.expose(required=('host',), expected=(LookupError,))
    def find(self, ctxt, host):
        raise KeyError(host)

    def shutdown(self):
        self.seen.append('shut down')


def _ctxt():
    return context.get_admin_context()


@pytest.mark.parametrize(
    'kwargs, reason',
    [
        ({}, 'missing argument(s) host'),
        ({'host': None}, 'missing argument(s) host'),
        ({'host': 'h', 'bogus': 1}, "unexpected keyword argument 'bogus'"),
        ({'host': 7}, 'host must be str, not int'),
        ({'host': 'h', 'count': True}, 'count must be int, not bool'),
        ({'host': 'h', 'tags': 'a,b'}, 'tags must be list or null, not str'),
        ({'host': 'deeper-check-fails'}, 'no such kind of host'),
    ],
)
def test_a_malformed_call_is_refused_with_invalid_message(kwargs, reason):
    # Dispatched by an RPC server: wrapped, so the server logs no error.
    with pytest.raises(messaging.ExpectedException) as info:
        rpc._RemoteEndpoint(Endpoint()).lookup(_ctxt(), **kwargs)
    refused = info.value.exc_info[1]
    assert isinstance(refused, rpc.InvalidMessage)
    assert reason in str(refused)
    # Called in process: the exception itself.
    with pytest.raises(rpc.InvalidMessage, match=re.escape(reason)):
        Endpoint().lookup(_ctxt(), **kwargs)


def test_a_good_call_runs():
    assert Endpoint().lookup(_ctxt(), host='h', count=2) == {
        'host': 'h',
        'count': 2,
    }


@pytest.mark.parametrize(
    'kwargs',
    [{}, {'value': 'text'}, {'value': {}, 'extra': 1}, {'value': {'bad': 1}}],
)
def test_a_malformed_cast_is_dropped(kwargs):
    endpoint = Endpoint()
    assert endpoint.note(_ctxt(), **kwargs) is None
    assert endpoint.seen == []


def test_exposed_methods_are_marked():
    assert Endpoint.lookup.exposed and Endpoint.note.exposed
    assert not hasattr(Endpoint.shutdown, 'exposed')
    assert Endpoint.note.validates == {
        'cast': True,
        'required': ('value',),
        'types': {'value': dict},
    }


@pytest.fixture
def served():
    conf = config.build_conf([])
    transport = rpc.get_transport(conf, 'inproc:///expose-test')
    endpoint = Endpoint()
    server = rpc.get_server(transport, 't', [endpoint], 's1')
    server.start()
    yield endpoint, rpc.get_client(transport, 't', '1.0', conf=conf)
    server.stop()
    server.wait()
    rpc.cleanup_transports(conf)
    inproc.reset_buses()


def test_over_the_bus_refusals_arrive_and_the_server_keeps_serving(served):
    endpoint, client = served
    with pytest.raises(rpc.InvalidMessage, match='missing argument'):
        client.call(_ctxt(), 'lookup')
    # Methods that are not exposed, and unknown ones, are not dispatched.
    for method in ('shutdown', 'nope', '_private'):
        with pytest.raises(Exception) as info:
            client.call(_ctxt(), method)
        assert 'NoSuchMethod' in (type(info.value).__name__ + str(info.value))
    assert 'shut down' not in endpoint.seen
    client.cast(_ctxt(), 'note', value='not a dict')
    client.cast(_ctxt(), 'shutdown')
    client.cast(_ctxt(), 'note', value={'n': 1})
    assert endpoint.cast_done.wait(10)
    assert endpoint.seen == [{'n': 1}]
    assert client.call(_ctxt(), 'lookup', host='h') == {
        'host': 'h',
        'count': 1,
    }


def test_an_expected_exception_is_an_answer_not_a_server_error():
    # ExpectedException makes oslo.messaging's RPC server send the original
    # exception back without logging it as an error.
    with pytest.raises(messaging.ExpectedException) as info:
        rpc._RemoteEndpoint(Endpoint()).find(_ctxt(), host='h')
    assert isinstance(info.value.exc_info[1], KeyError)
    with pytest.raises(KeyError):
        Endpoint().find(_ctxt(), host='h')


def test_the_remote_flag_ends_with_the_call():
    remote = rpc._RemoteEndpoint(Endpoint())
    with pytest.raises(messaging.ExpectedException):
        remote.find(_ctxt(), host='h')
    with pytest.raises(KeyError):  # same thread, in-process call after
        Endpoint().find(_ctxt(), host='h')
    assert remote.lookup(_ctxt(), host='h', count=2)['count'] == 2


def test_arriving_turns_a_malformed_contract_into_invalid_message():
    with pytest.raises(rpc.InvalidMessage, match='^prep_resize: bad$'):
        with rpc.arriving('prep_resize'):
            raise objects_base.MalformedPrimitive('bad')
    with pytest.raises(rpc.InvalidMessage, match='^bad$'):
        with rpc.arriving():
            raise objects_base.MalformedPrimitive('bad')


def test_arriving_turns_only_the_named_others():
    with pytest.raises(rpc.InvalidMessage, match='^evacuate: no$'):
        with rpc.arriving('evacuate', also=(ValueError,)):
            raise ValueError('no')
    with pytest.raises(ValueError):
        with rpc.arriving('evacuate'):
            raise ValueError('no')
