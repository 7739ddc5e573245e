"""``direct.mount``: a session's requests to a placement URL go straight
into the app of this process (the all-in-one's simulated hosts), through
the same validation, and nothing listens on that URL."""

import requests

from nimbus.common import config
from nimbus.placement import db as placement_db
from nimbus.placement import direct
from nimbus.placement import wsgi


def test_a_mounted_session_calls_the_app_without_a_server(tmp_path):
    url = 'sqlite:///%s/placement.sqlite' % tmp_path
    placement_db.sync(url)
    conf = config.build_conf(
        [], overrides={'placement_database': {'connection': url}}
    )
    app = wsgi.make_app(conf, auth_strategy='noauth2')
    # Port 9 (discard): a request that left the process would fail.
    session = direct.mount(requests.Session(), 'http://127.0.0.1:9', app)
    headers = {
        'X-Auth-Token': 'admin',
        'X-Roles': 'admin,service',
        'OpenStack-API-Version': 'placement 1.39',
    }
    created = session.post(
        'http://127.0.0.1:9/resource_providers',
        json={'name': 'cn1', 'uuid': '8a3c4d2e-1b5f-4e6a-9c7d-0f1e2d3c4b5a'},
        headers=headers,
    )
    assert created.status_code == 200, created.text
    listed = session.get(
        'http://127.0.0.1:9/resource_providers', headers=headers
    ).json()['resource_providers']
    assert [p['name'] for p in listed] == ['cn1']
    # Validation is the app's: a bad body is its 400, in JSON.
    bad = session.post(
        'http://127.0.0.1:9/resource_providers',
        json={'name': ''},
        headers=headers,
    )
    assert bad.status_code == 400
    assert 'errors' in bad.json()


def test_a_mounted_session_ignores_proxy_variables(tmp_path, monkeypatch):
    # No proxy sits between a process and its own app, and looking the
    # variables up on each request cost a quarter of its CPU.
    monkeypatch.setenv('HTTP_PROXY', 'http://127.0.0.1:9')
    monkeypatch.setenv('NO_PROXY', '')
    url = 'sqlite:///%s/placement.sqlite' % tmp_path
    placement_db.sync(url)
    conf = config.build_conf(
        [], overrides={'placement_database': {'connection': url}}
    )
    app = wsgi.make_app(conf, auth_strategy='noauth2')
    session = direct.mount(requests.Session(), 'http://127.0.0.1:9', app)
    assert session.trust_env is False
    listed = session.get(
        'http://127.0.0.1:9/resource_providers',
        headers={'X-Auth-Token': 'admin', 'X-Roles': 'admin,service'},
    )
    assert listed.status_code == 200
