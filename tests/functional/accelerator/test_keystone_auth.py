"""``[api] auth_strategy = keystone``: the accelerator app behind
keystonemiddleware (the placement tests' stand-in for auth_token; no
Keystone is contacted). Discovery stays public; identity and roles come
from the middleware, not from the client's headers."""

import falcon.testing
import pytest
from oslo_policy import opts as policy_opts

from nimbus.accelerator.api import wsgi
from nimbus.common import config
from tests.functional.placement.test_keystone_auth import FakeAuthToken


@pytest.fixture
def client(tmp_path):
    conf = config.build_conf([])
    policy_opts._register(conf)
    conf.set_override(
        'connection',
        'sqlite:///%s' % (tmp_path / 'accelerator.sqlite'),
        group='accelerator_database',
    )
    conf.set_override('auth_strategy', 'keystone', group='api')
    app = wsgi.make_app(conf, keystone_middleware=FakeAuthToken)
    return falcon.testing.TestClient(app)


@pytest.mark.parametrize(
    'path', ['/', '/v2', '/accelerator', '/accelerator/v2']
)
def test_discovery_needs_no_token(client, path):
    assert client.simulate_get(path).status_code == 200


def test_unknown_token_is_401(client):
    response = client.simulate_get(
        '/v2/device_profiles', headers={'X-Auth-Token': 'bogus'}
    )
    assert response.status_code == 401


def test_roles_come_from_keystone(client):
    body = [{'name': 'p', 'groups': [{'resources:FPGA': 1}]}]
    # A member claiming admin in X-Roles is still a member.
    response = client.simulate_post(
        '/v2/device_profiles',
        json=body,
        headers={'X-Auth-Token': 'tok-member', 'X-Roles': 'admin'},
    )
    assert response.status_code == 403
    response = client.simulate_post(
        '/v2/device_profiles', json=body, headers={'X-Auth-Token': 'tok-admin'}
    )
    assert response.status_code == 201
    response = client.simulate_get(
        '/v2/device_profiles', headers={'X-Auth-Token': 'tok-member'}
    )
    assert [p['name'] for p in response.json['device_profiles']] == ['p']
