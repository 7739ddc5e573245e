"""Hard limit on what one JSON body costs: [wsgi] max_request_body_size
holds for both REST APIs, by Content-Length before anything is read, and
the reader never takes more than one byte past it."""

import io

import falcon.testing
import orjson
import pytest

from nimbus.common import db as common_db
from nimbus.placement import wsgi as placement_wsgi
from tests.functional.api import fixtures
from tests.functional.placement import fixtures as placement_fixtures

LIMIT = 4096


@pytest.fixture
def api(tmp_path):
    fixture = fixtures.ApiFixture(
        tmp_path, overrides={'wsgi': {'max_request_body_size': LIMIT}}
    )
    fixture.add_flavor('1')
    fixture.image = fixture.add_image()
    yield fixture
    common_db.dispose_all()


def _server_body(padding):
    return orjson.dumps(
        {
            'server': {
                'name': 'vm',
                'flavorRef': '1',
                'imageRef': 'x',
                'metadata': {'pad': 'x' * padding},
            }
        }
    )


def test_a_body_over_the_limit_is_413_naming_the_option(api):
    r = api.client.simulate_post(
        '/v2.1/servers',
        body=_server_body(LIMIT),
        headers=dict(
            api.headers('demo'), **{'Content-Type': 'application/json'}
        ),
    )
    assert r.status_code == 413, r.text
    assert 'max_request_body_size' in r.json['overLimit']['message']
    assert api.conductor.calls == []


def test_a_body_under_the_limit_is_read(api):
    body = orjson.dumps(
        {'server': {'name': 'vm', 'flavorRef': '1', 'imageRef': api.image}}
    )
    r = api.client.simulate_post(
        '/v2.1/servers',
        body=body,
        headers=dict(
            api.headers('demo'), **{'Content-Type': 'application/json'}
        ),
    )
    assert r.status_code == 202, r.text


def test_a_body_without_a_length_is_held_to_the_limit(api):
    """A body with no Content-Length (chunked) has no length to refuse it
    by: the bounded reader then reads nothing of it, so however long it is
    it costs nothing, and the request is a 4xx."""
    body = _server_body(LIMIT * 4)
    env = falcon.testing.create_environ(
        path='/v2.1/servers',
        method='POST',
        headers=dict(
            api.headers('demo'), **{'Content-Type': 'application/json'}
        ),
    )
    env.pop('CONTENT_LENGTH', None)
    env['wsgi.input'] = io.BytesIO(body)
    start = falcon.testing.StartResponseMock()
    answer = orjson.loads(b''.join(api.app(env, start)))
    assert start.status[:1] == '4', answer
    assert api.conductor.calls == []


def test_placement_holds_the_same_limit(tmp_path):
    with placement_fixtures.fresh_database(tmp_path) as url:
        conf = placement_fixtures.make_conf(
            url, wsgi={'max_request_body_size': LIMIT}
        )
        client = falcon.testing.TestClient(
            placement_wsgi.make_app(conf),
            headers={
                'X-Auth-Token': 'admin',
                'Content-Type': 'application/json',
                'OpenStack-API-Version': 'placement latest',
            },
        )
        r = client.simulate_post(
            '/resource_providers',
            body=orjson.dumps({'name': 'x' * (LIMIT * 2)}),
        )
        assert r.status_code == 413, r.text
        assert 'max_request_body_size' in r.json['errors'][0]['detail']
        r = client.simulate_post(
            '/resource_providers', body=orjson.dumps({'name': 'small'})
        )
        assert r.status_code == 200, r.text
        common_db.get_database(url).dispose()
