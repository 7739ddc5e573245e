"""What the embedded HTTP server (cheroot) refuses before the app runs is
answered in the API's own JSON error shape, not in bare text."""

import socket

import orjson
import pytest

from nimbus.common import wsgi


def _root(req, resp):
    resp.media = {'versions': []}


@pytest.fixture(params=['placement', 'compute'])
def server(request):
    app = wsgi.build_app(
        [('/', {'GET': _root})],
        auth_strategy='noauth2',
        service_type=request.param,
        min_version='1.0',
        max_version='1.1',
        error_style=request.param,
    )
    server = wsgi.serve(app, '127.0.0.1', 0, threads=2, name='test')
    server.style = request.param
    yield server
    server.stop()


def _send(server, raw):
    with socket.create_connection(
        ('127.0.0.1', server.port), timeout=10
    ) as sock:
        sock.sendall(raw)
        data = b''
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
            head, _, body = data.partition(b'\r\n\r\n')
            length = [
                int(line.split(b':')[1])
                for line in head.split(b'\r\n')
                if line.lower().startswith(b'content-length:')
            ]
            if length and len(body) >= length[0]:
                break
    head, _, body = data.partition(b'\r\n\r\n')
    return head.decode('latin-1'), body


def _detail(server, body):
    doc = orjson.loads(body)
    if server.style == 'placement':
        (error,) = doc['errors']
        assert error['status'] == 400
        return error['detail']
    (inner,) = doc.values()
    assert inner['code'] == 400
    return inner['message']


@pytest.mark.parametrize(
    'raw,words',
    [
        (b'GARBAGE\r\n\r\n', 'Request-Line'),
        (
            b'POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n'
            b'Content-Length: abc\r\n\r\n',
            'Content-Length',
        ),
    ],
)
def test_server_refusal_is_json_naming_the_problem(server, raw, words):
    head, body = _send(server, raw)
    assert head.startswith('HTTP/1.1 400'), head
    assert 'Content-Type: application/json' in head
    assert words in _detail(server, body)


def test_the_app_still_answers_after_refusals(server):
    _send(server, b'GARBAGE\r\n\r\n')
    head, body = _send(
        server, b'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
    )
    assert head.startswith('HTTP/1.1 200'), head
    assert orjson.loads(body) == {'versions': []}


def _echo_routes():
    def echo(req, resp):
        resp.media = {'got': wsgi.json_body(req)}

    return [('/echo', {'POST': echo})]


def _chunked(payload):
    out = b''
    for i in range(0, len(payload), 1000):
        piece = payload[i : i + 1000]
        out += b'%x\r\n%s\r\n' % (len(piece), piece)
    return out + b'0\r\n\r\n'


def test_a_chunked_body_is_read_and_held_to_the_limit():
    app = wsgi.build_app(
        _echo_routes(),
        auth_strategy='noauth2',
        service_type='placement',
        min_version='1.0',
        max_version='1.1',
        error_style='placement',
        max_body_size=4096,
    )
    server = wsgi.serve(app, '127.0.0.1', 0, threads=2, name='test')
    head_of = (
        b'POST /echo HTTP/1.1\r\nHost: x\r\nX-Auth-Token: a\r\n'
        b'Content-Type: application/json\r\n'
        b'Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n'
    )
    try:
        small = orjson.dumps({'name': 'x' * 3000})
        head, body = _send(server, head_of + _chunked(small))
        assert head.startswith('HTTP/1.1 200'), head
        assert orjson.loads(body) == {'got': {'name': 'x' * 3000}}
        big = orjson.dumps({'name': 'x' * 5000})
        head, body = _send(server, head_of + _chunked(big))
        assert head.startswith('HTTP/1.1 413'), head
        assert (
            'max_request_body_size'
            in orjson.loads(body)['errors'][0]['detail']
        )
    finally:
        server.stop()
