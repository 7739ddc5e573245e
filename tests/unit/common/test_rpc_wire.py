"""What Nimbus's RPC plumbing puts on the wire and makes once: the request
context as the values a receiver reads, prepared call contexts reused,
endpoint wrappers made once, and a daemon's heap frozen after start-up."""

import gc

from nimbus.cmd import common
from nimbus.common import config
from nimbus.common import context
from nimbus.common import rpc


def _user():
    return context.RequestContext(
        user_id='u1',
        project_id='p1',
        roles=['member', 'reader'],
        request_id='req-1',
        global_request_id='req-g',
        overwrite=False,
    )


def test_the_context_travels_as_what_a_receiver_reads():
    wire = rpc.Serializer().serialize_context(_user())
    assert wire == {
        'user_id': 'u1',
        'project_id': 'p1',
        'request_id': 'req-1',
        'roles': ['member', 'reader'],
        'global_request_id': 'req-g',
    }
    back = rpc.Serializer().deserialize_context(wire)
    for name in (
        'user_id',
        'project_id',
        'request_id',
        'global_request_id',
        'is_admin',
        'read_only',
        'show_deleted',
    ):
        assert getattr(back, name) == getattr(_user(), name)
    assert back.roles == ['member', 'reader']


def test_the_flags_travel_when_set_and_the_token_never():
    ctxt = context.RequestContext(
        user_id='u',
        project_id='p',
        is_admin=True,
        read_only=True,
        show_deleted=True,
        auth_token='secret',
        overwrite=False,
    )
    wire = rpc.Serializer().serialize_context(ctxt)
    assert wire['is_admin'] and wire['read_only'] and wire['show_deleted']
    assert 'secret' not in repr(wire)
    back = rpc.Serializer().deserialize_context(wire)
    assert back.is_admin and back.read_only and back.show_deleted


def test_a_full_context_dict_of_an_older_sender_is_still_read():
    old = _user().to_dict()
    back = rpc.Serializer().deserialize_context(old)
    assert (back.user_id, back.project_id, back.request_id) == (
        'u1',
        'p1',
        'req-1',
    )


def test_a_client_prepares_each_set_of_overrides_once():
    conf = config.build_conf([])
    transport = rpc.get_transport(conf, 'inproc:///wire-test')
    try:
        client = rpc.get_client(transport, 'topic', '1.3', conf=conf)
        one = client.prepare(version='1.0')
        assert client.prepare(version='1.0') is one
        fanout = client.prepare(version='1.0', fanout=True)
        assert fanout is not one and fanout.target.fanout
        assert client.prepare(version='1.2').target.version == '1.2'
        # an unhashable override is still prepared, each time
        assert client.prepare(transport_options=None) is not None
    finally:
        rpc.cleanup_transports(conf)


def test_a_remote_endpoint_wraps_each_exposed_method_once():
    class Endpoint:
        @rpc.expose()
        def find(self, ctxt, host):
            return host

    remote = rpc._RemoteEndpoint(Endpoint())
    assert remote.find is remote.find
    assert remote.find(_user(), host='h') == 'h'


def test_settle_freezes_what_start_up_built():
    try:
        common.settle()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
