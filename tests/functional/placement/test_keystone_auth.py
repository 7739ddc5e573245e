"""``[api] auth_strategy = keystone``: identity from keystonemiddleware.

The placement app is built on the keystone path with a stand-in for
auth_token that behaves as the real one does towards the app it wraps: it
drops any identity headers the client sent, and for a known token sets
``X-Identity-Status: Confirmed`` with the user, project and roles; for an
unknown or missing token it either answers 401 itself or, like
``delay_auth_decision = True``, passes the request on with
``X-Identity-Status: Invalid``. No Keystone is contacted.
"""

import falcon.testing
from keystonemiddleware import opts as ksm_opts
import orjson
import pytest

from nimbus.common import db as common_db
from nimbus.placement import wsgi
from tests.functional.placement import fixtures

TOKENS = {
    'tok-admin': ('u-admin', 'p-admin', 'admin,member,reader'),
    'tok-service': ('u-nova', 'p-service', 'service'),
    'tok-member': ('u-alice', 'p-alice', 'member,reader'),
}
# system-scoped tokens: no project, OpenStack-System-Scope set
SYSTEM_TOKENS = {
    'tok-system-admin': ('u-sysadmin', None, 'admin,member,reader')
}
_IDENTITY = (
    'HTTP_X_IDENTITY_STATUS',
    'HTTP_X_USER_ID',
    'HTTP_X_PROJECT_ID',
    'HTTP_X_ROLES',
    'HTTP_X_SERVICE_ROLES',
    'HTTP_OPENSTACK_SYSTEM_SCOPE',
)


class FakeAuthToken:
    """Stand-in for keystonemiddleware.auth_token.AuthProtocol."""

    def __init__(self, app, conf, delay_auth_decision=False):
        self.app = app
        self.conf = conf
        self.delay = delay_auth_decision
        self.seen = []

    def __call__(self, environ, start_response):
        for key in _IDENTITY:
            environ.pop(key, None)
        token = environ.get('HTTP_X_AUTH_TOKEN')
        self.seen.append(token)
        identity = TOKENS.get(token)
        if token in SYSTEM_TOKENS:
            user, _project, roles = SYSTEM_TOKENS[token]
            environ.update(
                HTTP_X_IDENTITY_STATUS='Confirmed',
                HTTP_X_USER_ID=user,
                HTTP_X_ROLES=roles,
                HTTP_OPENSTACK_SYSTEM_SCOPE='all',
            )
        elif identity is None:
            if not self.delay:
                body = b'{"error": {"code": 401, "title": "Unauthorized"}}'
                start_response(
                    '401 Unauthorized',
                    [
                        ('Content-Type', 'application/json'),
                        ('WWW-Authenticate', 'Keystone uri="http://keystone"'),
                    ],
                )
                return [body]
            environ['HTTP_X_IDENTITY_STATUS'] = 'Invalid'
        else:
            user, project, roles = identity
            environ.update(
                HTTP_X_IDENTITY_STATUS='Confirmed',
                HTTP_X_USER_ID=user,
                HTTP_X_PROJECT_ID=project,
                HTTP_X_ROLES=roles,
            )
        return self.app(environ, start_response)


@pytest.fixture
def make_client(tmp_path):
    with fixtures.fresh_database(tmp_path) as url:

        def make(delay=False):
            conf = fixtures.make_conf(url, api={'auth_strategy': 'keystone'})
            made = []

            def middleware(app, keystone_conf):
                assert keystone_conf is conf
                made.append(FakeAuthToken(app, keystone_conf, delay))
                return made[0]

            app = wsgi.make_app(conf, keystone_middleware=middleware)
            client = falcon.testing.TestClient(
                app,
                headers={
                    'Content-Type': 'application/json',
                    'OpenStack-API-Version': 'placement latest',
                },
            )
            client.auth = made[0]
            return client

        yield make
        common_db.get_database(url).dispose()


def _get(client, path, token=None, **headers):
    if token:
        headers['X-Auth-Token'] = token
    return client.simulate_get(path, headers=headers)


def test_version_document_skips_the_middleware(make_client):
    client = make_client()
    response = _get(client, '/')
    assert response.status_code == 200
    assert response.json['versions'][0]['max_version'] == '1.39'
    assert client.auth.seen == []


def test_a_confirmed_identity_reaches_the_handler(make_client):
    client = make_client()
    response = client.simulate_post(
        '/resource_providers',
        headers={'X-Auth-Token': 'tok-admin'},
        body=orjson.dumps({'name': 'cn1'}),
    )
    assert response.status_code == 200
    listed = _get(client, '/resource_providers', 'tok-service')
    assert listed.status_code == 200
    assert [p['name'] for p in listed.json['resource_providers']] == ['cn1']
    assert client.auth.seen == ['tok-admin', 'tok-service']


def test_roles_are_enforced_by_policy(make_client):
    client = make_client()
    response = _get(client, '/resource_providers', 'tok-member')
    assert response.status_code == 403
    assert response.json['errors'][0]['status'] == 403
    # Usages: a reader of the project itself may look, not of another.
    assert (
        _get(client, '/usages?project_id=p-alice', 'tok-member').status_code
        == 200
    )
    assert (
        _get(client, '/usages?project_id=p-admin', 'tok-member').status_code
        == 403
    )
    # The reshaper is the service role's alone under the new defaults.
    body = orjson.dumps({'inventories': {}, 'allocations': {}})
    admin = client.simulate_post(
        '/reshaper', body=body, headers={'X-Auth-Token': 'tok-admin'}
    )
    assert admin.status_code == 403
    service = client.simulate_post(
        '/reshaper', body=body, headers={'X-Auth-Token': 'tok-service'}
    )
    assert service.status_code == 400  # past policy: no provider named


def test_identity_headers_sent_by_a_client_count_for_nothing(make_client):
    client = make_client(delay=True)
    response = _get(
        client,
        '/resource_providers',
        'tok-member',
        **{'X-Roles': 'admin', 'X-Identity-Status': 'Confirmed'},
    )
    assert response.status_code == 403


@pytest.mark.parametrize('token', [None, 'tok-unknown'])
def test_middleware_refusal_is_401(make_client, token):
    client = make_client()
    response = _get(client, '/resource_providers', token)
    assert response.status_code == 401
    assert response.json['error']['code'] == 401
    assert 'www-authenticate' in response.headers


@pytest.mark.parametrize('token', [None, 'tok-unknown'])
def test_delayed_decision_is_a_json_401_from_placement(make_client, token):
    client = make_client(delay=True)
    response = _get(client, '/resource_providers', token)
    assert response.status_code == 401
    (error,) = response.json['errors']
    assert error['status'] == 401
    assert error['title'] == 'Unauthorized'
    assert error['request_id'].startswith('req-')


def test_without_any_identity_status_the_app_refuses(make_client):
    """Defence in depth: if the middleware were missing, no identity
    header means no access (not an anonymous admin)."""
    conf_client = make_client()
    inner = conf_client.auth.app  # the placement app behind the middleware
    client = falcon.testing.TestClient(
        inner,
        headers={
            'X-Auth-Token': 'tok-admin',
            'X-Roles': 'admin',
            'X-User-Id': 'u',
            'X-Project-Id': 'p',
        },
    )
    assert client.simulate_get('/resource_providers').status_code == 401


def test_real_auth_token_refuses_a_tokenless_request(tmp_path):
    """The default path wraps keystonemiddleware's auth_token itself; a
    request without a token is refused before any Keystone is asked."""
    with fixtures.fresh_database(tmp_path) as url:
        conf = fixtures.make_conf(url, api={'auth_strategy': 'keystone'})
        for group, opts in ksm_opts.list_auth_token_opts():
            conf.register_opts(opts, group=group)
        # Where clients are sent to get a token (no request goes there).
        conf.set_override(
            'www_authenticate_uri',
            'http://keystone.invalid',
            group='keystone_authtoken',
        )
        app = wsgi.make_app(conf)
        client = falcon.testing.TestClient(app)
        assert client.simulate_get('/').status_code == 200
        response = client.simulate_get('/resource_providers')
        assert response.status_code == 401
        assert 'keystone.invalid' in response.headers['www-authenticate']
        common_db.get_database(url).dispose()


def test_a_system_scoped_token_is_refused_by_scope(make_client):
    """Placement 16's rules are for project scope: a system-scoped admin
    token gets 403 (oslo.policy's enforce_scope), a project admin 200."""
    client = make_client()
    for path in (
        '/resource_providers',
        '/traits',
        '/resource_classes',
        '/usages?project_id=p-admin',
        '/allocation_candidates?resources=VCPU:1',
    ):
        refused = _get(client, path, 'tok-system-admin')
        assert refused.status_code == 403, (path, refused.text)
        assert _get(client, path, 'tok-admin').status_code == 200, path
    # a client cannot claim the system scope itself
    claimed = _get(
        client,
        '/resource_providers',
        'tok-admin',
        **{'OpenStack-System-Scope': 'all'},
    )
    assert claimed.status_code == 200
