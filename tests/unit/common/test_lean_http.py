"""The placement client's lean sender (lean_http.LeanSession): what the
client reads of a response is what requests gives, over kept connections."""

import http.server
import json
import socket
import socketserver
import threading

import pytest
import requests

from nimbus.common import config
from nimbus.common.clients import lean_http
from nimbus.common.clients import placement as placement_client


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def _answer(self, status, body=b'', close=False):
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.send_header('X-Seen-Path', self.path)
        if close:
            self.send_header('Connection', 'close')
        self.end_headers()
        self.wfile.write(body)
        if close:
            self.close_connection = True

    def do_GET(self):
        self.server.seen.append(('GET', self.path, dict(self.headers), None))
        body = json.dumps({'path': self.path, 'big': 'x' * 200000})
        self._answer(200, body.encode(), close='close' in self.path)

    def do_PUT(self):
        length = int(self.headers['Content-Length'])
        body = self.rfile.read(length)
        self.server.seen.append(('PUT', self.path, dict(self.headers), body))
        self._answer(409, b'{"errors": [{"code": "placement.x"}]}')

    def log_message(self, *args):
        pass


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(('127.0.0.1', 0), _Handler)
        self.seen = []
        self.connections = 0

    def get_request(self):
        self.connections += 1
        return super().get_request()


@pytest.fixture
def server():
    srv = _Server()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _url(server, path):
    return 'http://127.0.0.1:%d%s' % (server.server_address[1], path)


def test_answers_read_as_requests_reads_them(server):
    lean, plain = lean_http.LeanSession(), requests.Session()
    params = [('resources', 'VCPU:1,MEMORY_MB:512'), ('limit', '5')]
    headers = {'OpenStack-API-Version': 'placement 1.39'}
    got = [
        s.request(
            'GET',
            _url(server, '/allocation_candidates'),
            params=params,
            headers=headers,
            timeout=5,
        )
        for s in (lean, plain)
    ]
    assert got[0].status_code == got[1].status_code == 200
    assert got[0].content == got[1].content
    assert got[0].json() == got[1].json()
    assert got[0].text == got[1].text
    assert got[0].headers['x-seen-path'] == got[1].headers['X-Seen-Path']
    assert server.seen[0][1] == server.seen[1][1]
    assert server.seen[0][2]['OpenStack-API-Version'] == 'placement 1.39'
    body = {'allocations': {'rp': {'resources': {'VCPU': 1}}}}
    put = [
        s.request('PUT', _url(server, '/allocations/c'), json=body, timeout=5)
        for s in (lean, plain)
    ]
    assert [p.status_code for p in put] == [409, 409]
    assert put[0].json() == put[1].json()
    assert json.loads(server.seen[2][3]) == json.loads(server.seen[3][3])
    assert server.seen[2][2]['Content-Type'] == 'application/json'


def test_connections_are_kept_and_replaced_when_closed(server):
    lean = lean_http.LeanSession()
    for _ in range(3):
        lean.get(_url(server, '/a'), timeout=5)
    assert server.connections == 1
    # the server closes after this answer: the next request opens another
    lean.get(_url(server, '/close'), timeout=5)
    lean.get(_url(server, '/b'), timeout=5)
    assert server.connections == 2
    # an idle connection the server dropped is noticed before reuse
    (conn,) = lean._idle['127.0.0.1:%d' % server.server_address[1]]
    conn.sock.shutdown(socket.SHUT_RDWR)
    assert lean.get(_url(server, '/c'), timeout=5).status_code == 200
    lean.close()


def test_an_unreachable_peer_is_a_connection_error():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    with pytest.raises(requests.ConnectionError):
        lean_http.LeanSession().get('http://127.0.0.1:%d/' % port, timeout=5)


def test_the_placement_client_sends_plain_http_through_it():
    for endpoint, kind in (
        ('http://127.0.0.1:8778', lean_http.LeanSession),
        ('https://placement.example.org', requests.Session),
    ):
        conf = config.build_conf(
            [], overrides={'placement_client': {'endpoint': endpoint}}
        )
        client = placement_client.PlacementClient.from_conf(conf)
        assert type(client.session) is kind


def test_session_for_keeps_requests_where_it_cannot_do_the_same(monkeypatch):
    for name in ('http_proxy', 'HTTP_PROXY', 'no_proxy', 'NO_PROXY'):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(
        lean_http.session_for('http://placement:8778'), lean_http.LeanSession
    )
    assert isinstance(
        lean_http.session_for('https://placement:8778'), requests.Session
    )
    # A proxy the environment sets for the endpoint: requests applies it.
    monkeypatch.setenv('http_proxy', 'http://proxy:3128')
    assert isinstance(
        lean_http.session_for('http://placement:8778'), requests.Session
    )
    monkeypatch.setenv('no_proxy', 'placement')
    assert isinstance(
        lean_http.session_for('http://placement:8778'), lean_http.LeanSession
    )
