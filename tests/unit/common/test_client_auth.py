"""nimbus.common.clients.auth: the service clients authenticate through
keystoneauth sessions loaded from their config groups.

A stand-in Keystone (just POST /v3/auth/tokens) and a stand-in peer run on
local HTTP servers; the clients are built from config as services build
them."""

import http.server
import json
import threading

import pytest

from nimbus.common.clients import accelerator
from nimbus.common.clients import auth
from nimbus.common.clients import placement
from nimbus.common import config
from nimbus.common import exception

TOKEN = 'gAAAAA-service-token'


class _Handler(http.server.BaseHTTPRequestHandler):
    seen = None  # set per server: a list of (method, path, headers)

    def log_message(self, *args):
        pass

    def _answer(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.server.seen.append(('GET', self.path, dict(self.headers)))
        if self.path.startswith('/v3'):
            return self._answer(
                200,
                {
                    'version': {
                        'id': 'v3.14',
                        'status': 'stable',
                        'links': [
                            {'rel': 'self', 'href': self.server.url + '/v3/'}
                        ],
                    }
                },
            )
        if self.path.startswith('/device_profiles'):
            return self._answer(
                200,
                {
                    'device_profiles': [
                        {'name': 'gpu', 'groups': [{'resources:PGPU': '1'}]}
                    ]
                },
            )
        return self._answer(200, {'resource_providers': []})

    def do_POST(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = json.loads(self.rfile.read(length) or b'{}')
        self.server.seen.append(('POST', self.path, dict(self.headers), body))
        if self.path == '/v3/auth/tokens':
            return self._answer(
                201,
                {
                    'token': {
                        'methods': ['password'],
                        'expires_at': '2999-01-01T00:00:00.000000Z',
                        'issued_at': '2020-01-01T00:00:00.000000Z',
                        'catalog': [],
                        'user': {
                            'id': 'u1',
                            'name': 'nimbus',
                            'domain': {'id': 'default', 'name': 'Default'},
                        },
                        'project': {
                            'id': 'p1',
                            'name': 'service',
                            'domain': {'id': 'default', 'name': 'Default'},
                        },
                        'roles': [{'id': 'r1', 'name': 'service'}],
                    }
                },
                headers=[('X-Subject-Token', TOKEN)],
            )
        return self._answer(404, {})


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Handler)
    httpd.seen = []
    httpd.url = 'http://127.0.0.1:%d' % httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _keystone_conf(url, group, section=True):
    credentials = {
        'auth_type': 'password',
        'auth_url': url + '/v3',
        'username': 'nimbus',
        'password': 'secret',
        'project_name': 'service',
        'user_domain_name': 'Default',
        'project_domain_name': 'Default',
    }
    lines = ['[%s]' % group, 'endpoint = %s' % url, 'auth_strategy = keystone']
    if section:
        lines.append('auth_section = keystone_authtoken')
        lines.append('[keystone_authtoken]')
    lines += ['%s = %s' % item for item in credentials.items()]
    return '\n'.join(lines) + '\n'


def _conf(tmp_path, text):
    path = tmp_path / 'nimbus.conf'
    path.write_text(text)
    return config.build_conf(['--config-file', str(path)])


@pytest.mark.parametrize('section', [True, False])
def test_placement_client_gets_a_token_from_keystone(
    tmp_path, server, section
):
    conf = _conf(
        tmp_path, _keystone_conf(server.url, 'placement_client', section)
    )
    client = placement.PlacementClient.from_conf(conf)
    assert isinstance(client.session, auth.KeystoneSender)
    assert client.find_provider_by_name(None, 'cn1') is None
    posts = [s for s in server.seen if s[0] == 'POST']
    assert posts[0][1] == '/v3/auth/tokens'
    identity = posts[0][3]['auth']['identity']['password']['user']
    assert identity['name'] == 'nimbus'
    assert identity['password'] == 'secret'
    get = [
        s
        for s in server.seen
        if s[0] == 'GET' and s[1].startswith('/resource_providers')
    ][0]
    assert get[2]['X-Auth-Token'] == TOKEN
    assert 'X-Roles' not in get[2]
    assert get[2]['OpenStack-API-Version'] == 'placement 1.39'


def test_accelerator_client_gets_a_token_from_keystone(tmp_path, server):
    conf = _conf(tmp_path, _keystone_conf(server.url, 'accelerator_client'))
    client = accelerator.from_conf(conf)
    assert client.get_device_request_groups(None, 'gpu')[0]['resources'] == {
        'PGPU': 1
    }
    get = [s for s in server.seen if s[1].startswith('/device_profiles')][0]
    assert get[2]['X-Auth-Token'] == TOKEN
    assert 'X-Roles' not in get[2]


def test_noauth2_sends_the_development_token(tmp_path, server):
    conf = _conf(tmp_path, '[placement_client]\nendpoint = %s\n' % server.url)
    client = placement.PlacementClient.from_conf(conf)
    assert not isinstance(client.session, auth.KeystoneSender)
    client.find_provider_by_name(None, 'cn1')
    headers = server.seen[0][2]
    assert headers['X-Auth-Token'] == 'nimbus:service'
    assert headers['X-Roles'] == 'admin,service'


def test_keystone_without_auth_type_says_what_is_missing(tmp_path):
    conf = _conf(tmp_path, '[placement_client]\nauth_strategy = keystone\n')
    with pytest.raises(auth.AuthConfigError, match='auth_type'):
        placement.PlacementClient.from_conf(conf)


def test_unreachable_peer_is_a_connection_error(tmp_path, server):
    conf = _conf(tmp_path, _keystone_conf(server.url, 'placement_client'))
    conf.set_override('endpoint', 'http://127.0.0.1:9', 'placement_client')
    conf.set_override('retries', 0, 'placement_client')
    client = placement.PlacementClient.from_conf(conf)
    with pytest.raises(exception.PlacementError):
        client.find_provider_by_name(None, 'cn1')


class _FailingSession:
    """A keystoneauth Session whose token request got ``exc``."""

    def __init__(self, exc):
        self.exc = exc

    def request(self, url, method, **kwargs):
        raise self.exc


def test_a_5xx_from_the_identity_service_is_retried_as_unreachable():
    from keystoneauth1 import exceptions as ks_exc
    import requests

    sender = auth.KeystoneSender(
        _FailingSession(ks_exc.InternalServerError('database is locked'))
    )
    with pytest.raises(requests.ConnectionError, match='identity service'):
        sender.request('GET', 'http://placement/resource_providers')


def test_refused_credentials_are_not_retried():
    from keystoneauth1 import exceptions as ks_exc

    sender = auth.KeystoneSender(_FailingSession(ks_exc.Unauthorized()))
    with pytest.raises(ks_exc.Unauthorized):
        sender.request('GET', 'http://placement/resource_providers')
