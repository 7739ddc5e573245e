"""The embedded HTTP server writes a response with a known length in one
``send`` (head and body together); a response without a body and a
chunked one still arrive whole, on a connection kept alive between
requests."""

import http.client
import socket

import pytest

from nimbus.common import wsgi
from nimbus.common.wsgi import server as wsgi_server


def _body(req, resp):
    resp.media = {'hello': 'world' * 100}


def _empty(req, resp):
    resp.status = 204


def _raw_app(environ, start_response):
    # No Content-Length: cheroot answers HTTP/1.1 chunked.
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [b'one ', b'two']


@pytest.fixture
def server():
    app = wsgi.build_app(
        [('/body', {'GET': _body}), ('/empty', {'DELETE': _empty})],
        auth_strategy='noauth2',
        service_type='placement',
        min_version='1.0',
        max_version='1.1',
        error_style='placement',
    )
    server = wsgi.serve(app, '127.0.0.1', 0, threads=2, name='test')
    yield server
    server.stop()


@pytest.fixture
def sends(monkeypatch):
    """The number of writes to the client's socket."""
    count = []
    real = socket.socket.send

    def send(self, data, *args):
        count.append(len(data))
        return real(self, data, *args)

    monkeypatch.setattr(socket.socket, 'send', send)
    return count


def test_a_body_and_no_body_on_one_kept_alive_connection(server, sends):
    conn = http.client.HTTPConnection('127.0.0.1', server.port, timeout=10)
    headers = {'x-auth-token': 'admin'}
    for _ in range(2):
        del sends[:]
        conn.request('GET', '/body', headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        assert resp.status == 200
        assert body == b'{"hello":"' + b'world' * 100 + b'"}'
        assert int(resp.getheader('content-length')) == len(body)
        # One send by the server (cheroot alone sends the head, then the
        # body; http.client sends with sendall, not counted).
        assert len(sends) == 1
        conn.request('DELETE', '/empty', headers=headers)
        resp = conn.getresponse()
        assert resp.status == 204
        assert resp.read() == b''
    conn.close()


def test_a_chunked_response_arrives_whole():
    server = wsgi_server.serve(_raw_app, '127.0.0.1', 0, threads=1)
    try:
        conn = http.client.HTTPConnection('127.0.0.1', server.port, timeout=10)
        conn.request('GET', '/')
        resp = conn.getresponse()
        assert resp.status == 200
        assert resp.getheader('transfer-encoding') == 'chunked'
        assert resp.read() == b'one two'
        conn.request('GET', '/')
        assert conn.getresponse().read() == b'one two'
        conn.close()
    finally:
        server.stop()
