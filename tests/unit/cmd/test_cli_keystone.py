"""``--config-file`` with ``auth_strategy = keystone``: the CLI gets its
token from the identity service (a stand-in for Keystone's v3 API,
nimbus.testing.identity_stub) through keystoneauth, as the daemons' clients
do, and sends it to nimbus-api (here a server that records what it got)
without noauth2's headers."""

import json
import threading
from wsgiref import simple_server

import pytest

from nimbus.cmd import cli
from nimbus.testing import identity_stub


class _Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def stub():
    stub = identity_stub.IdentityStub().start()
    yield stub
    stub.stop()


@pytest.fixture
def api():
    """Answers GET /v2.1/servers/detail with no servers; ``seen`` holds
    each request's headers."""
    seen = []

    def app(environ, start_response):
        seen.append(
            {
                k[5:].replace('_', '-').lower(): v
                for k, v in environ.items()
                if k.startswith('HTTP_')
            }
        )
        body = json.dumps({'servers': []}).encode()
        start_response('200 OK', [('Content-Type', 'application/json')])
        return [body]

    server = simple_server.make_server(
        '127.0.0.1', 0, app, handler_class=_Quiet
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.seen = seen
    server.url = 'http://127.0.0.1:%d' % server.server_port
    yield server
    server.shutdown()
    server.server_close()


def _servers(api, path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(
            ['servers', '--format', 'json', '--config-file', str(path)]
            + ['--url', api.url]
        )
    assert exit_.value.code in (0, None)
    assert json.loads(capsys.readouterr().out) == []
    (headers,) = api.seen
    return headers


def test_compute_client_group(stub, api, tmp_path, capsys):
    path = tmp_path / 'cli.conf'
    path.write_text(
        '[compute_client]\nauth_strategy = keystone\n'
        'auth_type = password\nauth_url = %s/v3\nusername = %s\n'
        'password = %s\nproject_name = %s\nuser_domain_name = Default\n'
        'project_domain_name = Default\n'
        % (
            stub.url,
            identity_stub.SERVICE_USER,
            identity_stub.SERVICE_PASSWORD,
            identity_stub.SERVICE_PROJECT,
        )
    )
    headers = _servers(api, path, capsys)
    assert headers['x-auth-token'] in stub.service_tokens
    assert 'x-roles' not in headers
    assert headers['openstack-api-version'].startswith('compute ')


def test_nimbus_conf_placement_client_auth_section(
    stub, api, tmp_path, capsys
):
    """An API-level file as the README ships it: [placement_client]
    auth_strategy = keystone, auth_section = keystone_authtoken."""
    path = tmp_path / 'nimbus.conf'
    path.write_text(
        '[placement_client]\nauth_strategy = keystone\n'
        'auth_section = keystone_authtoken\n' + stub.config_text()
    )
    headers = _servers(api, path, capsys)
    assert headers['x-auth-token'] in stub.service_tokens


def test_wrong_password_is_one_line(stub, api, tmp_path, capsys):
    path = tmp_path / 'bad.conf'
    path.write_text(
        '[compute_client]\nauth_strategy = keystone\n'
        'auth_type = password\nauth_url = %s/v3\nusername = nimbus\n'
        'password = wrong\nproject_name = service\n'
        'user_domain_name = Default\nproject_domain_name = Default\n'
        % stub.url
    )
    with pytest.raises(SystemExit) as exit_:
        cli.main(['servers', '--config-file', str(path), '--url', api.url])
    assert 'identity service' in str(exit_.value.code)
    assert api.seen == []


def test_keystone_without_credentials_is_one_line(api, tmp_path):
    path = tmp_path / 'none.conf'
    path.write_text('[compute_client]\nauth_strategy = keystone\n')
    with pytest.raises(SystemExit) as exit_:
        cli.main(['servers', '--config-file', str(path), '--url', api.url])
    assert 'auth_type' in str(exit_.value.code)
    assert api.seen == []


def test_unreachable_identity_service_is_named(api, tmp_path):
    path = tmp_path / 'away.conf'
    path.write_text(
        '[compute_client]\nauth_strategy = keystone\n'
        'auth_type = password\nauth_url = http://127.0.0.1:9/v3\n'
        'username = nimbus\npassword = p\nproject_name = service\n'
        'user_domain_name = Default\nproject_domain_name = Default\n'
    )
    with pytest.raises(SystemExit) as exit_:
        cli.main(['servers', '--config-file', str(path), '--url', api.url])
    message = str(exit_.value.code)
    assert 'http://127.0.0.1:9/v3' in message
    assert api.url not in message
    assert len(message.splitlines()) == 1
    assert api.seen == []
