"""A value the database refuses (out of range for its column) is the
request's fault: a 400 in the API's JSON error shape, never a 500. A
database that cannot serve right now (restarting, unreachable, out of
connections) is a 503 with Retry-After: the request may be retried."""

import falcon.testing
import pytest
import sqlalchemy as sa
import sqlalchemy.orm  # noqa: F401  (sa.orm.exc)

from nimbus.common import wsgi


@pytest.fixture
def client(tmp_path):
    engine = sa.create_engine('sqlite:///%s/t.db' % tmp_path)

    def store(req, resp):
        # SQLite takes any size of integer; MariaDB refuses one out of
        # range for INT with DataError (1264), which pymysql raises as
        # this same SQLAlchemy class.
        raise sa.exc.DataError(
            'INSERT',
            {},
            Exception('(1264, "Out of range value for column \'min_ram\'")'),
        )

    def race(req, resp):
        raise sa.orm.exc.StaleDataError(
            "UPDATE statement on table 'images' expected to update 1 "
            'row(s); 0 were matched.'
        )

    def boom(req, resp):
        raise sa.exc.OperationalError(
            'SELECT',
            {},
            Exception("(2003, \"Can't connect to MySQL server on 'db'\")"),
        )

    def dropped(req, resp):
        raise sa.exc.DBAPIError(
            'SELECT',
            {},
            Exception('server closed'),
            connection_invalidated=True,
        )

    def pool(req, resp):
        raise sa.exc.TimeoutError('QueuePool limit of size 5 reached')

    def unsynced(req, resp):
        raise sa.exc.OperationalError(
            'SELECT', {}, Exception('no such table: images')
        )

    def programming(req, resp):
        raise sa.exc.ProgrammingError('SELECT', {}, Exception('syntax'))

    app = wsgi.build_app(
        [
            ('/store', {'POST': store}),
            ('/race', {'PATCH': race}),
            ('/boom', {'GET': boom}),
            ('/dropped', {'GET': dropped}),
            ('/pool', {'GET': pool}),
            ('/unsynced', {'GET': unsynced}),
            ('/programming', {'GET': programming}),
        ],
        auth_strategy='noauth2',
        service_type='compute',
        min_version='2.1',
        max_version='2.1',
        error_style='compute',
    )
    yield falcon.testing.TestClient(app, headers={'X-Auth-Token': 'a'})
    engine.dispose()


def test_data_error_is_a_400_naming_the_problem(client):
    r = client.simulate_post('/store')
    assert r.status_code == 400
    assert 'out of range' in r.json['badRequest']['message']
    assert 'min_ram' not in r.text  # no database internals


def test_row_gone_meanwhile_is_a_409(client):
    r = client.simulate_patch('/race')
    assert r.status_code == 409
    assert 'another request' in r.json['conflictingRequest']['message']
    assert 'images' not in r.text


@pytest.mark.parametrize('path', ['/boom', '/dropped', '/pool'])
def test_a_database_that_cannot_serve_is_a_503_to_retry(client, path):
    r = client.simulate_get(path)
    assert r.status_code == 503
    assert r.headers['Retry-After'] == '5'
    message = r.json['serviceUnavailable']['message']
    assert 'unavailable right now' in message
    assert 'retry' in message
    assert "Can't connect" not in r.text  # no database internals
    assert 'QueuePool' not in r.text


@pytest.mark.parametrize('path', ['/unsynced', '/programming'])
def test_other_database_errors_stay_500(client, path):
    r = client.simulate_get(path)
    assert r.status_code == 500
    assert 'images' not in r.text
    assert 'syntax' not in r.text
