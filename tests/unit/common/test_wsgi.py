"""The REST base: errors never leak tracebacks, microversions negotiate,
bodies validate with messages that name the field."""

import falcon.testing
import pytest

from nimbus.common import exception
from nimbus.common import wsgi
from nimbus.common.wsgi import microversion

SCHEMA = {
    'type': 'object',
    'required': ['name'],
    'properties': {
        'name': {'type': 'string', 'maxLength': 5},
        'size': {'type': 'integer', 'minimum': 1},
    },
    'additionalProperties': False,
}


def _routes():
    def root(req, resp):
        resp.media = {'versions': []}

    def thing(req, resp, name):
        if name == 'boom':
            raise RuntimeError('secret internals')
        if name == 'missing':
            raise exception.NotFound('No thing named missing.')
        resp.media = {
            'name': name,
            'version': str(req.context['version']),
            'user': req.context['ctx'].user_id,
            'project': req.context['ctx'].project_id,
            'admin': req.context['ctx'].is_admin,
            'global': req.context['ctx'].global_request_id,
        }

    def create(req, resp):
        resp.media = wsgi.json_body(req, SCHEMA)

    return [
        ('/', {'GET': root}),
        ('/things/{name}', {'GET': thing}),
        ('/things', {'POST': create}),
    ]


@pytest.fixture(params=['placement', 'compute'])
def client(request):
    app = wsgi.build_app(
        _routes(),
        auth_strategy='noauth2',
        service_type=request.param,
        min_version='1.0',
        max_version='1.9',
        error_style=request.param,
    )
    client = falcon.testing.TestClient(
        app, headers={'X-Auth-Token': 'alice:proj'}
    )
    client.style = request.param
    return client


def _message(client, response):
    body = response.json
    if client.style == 'placement':
        error = body['errors'][0]
        assert error['status'] == response.status_code
        assert (
            error['request_id'] == response.headers['x-openstack-request-id']
        )
        return error['detail']
    (inner,) = body.values()
    assert inner['code'] == response.status_code
    return inner['message']


def test_unexpected_exception_is_a_json_500_without_internals(client):
    response = client.simulate_get('/things/boom')
    assert response.status_code == 500
    assert 'secret internals' not in response.text
    assert 'Traceback' not in response.text


def test_domain_exception_maps_to_its_code(client):
    response = client.simulate_get('/things/missing')
    assert response.status_code == 404
    assert 'No thing named missing.' in _message(client, response)


def test_unknown_route_and_wrong_method_are_json(client):
    assert client.simulate_get('/nowhere').status_code == 404
    response = client.simulate_delete('/things/x')
    assert response.status_code == 405
    assert response.headers['allow'] == 'GET'
    _message(client, response)


@pytest.mark.parametrize(
    'method', ['OPTIONS', 'HEAD', 'PATCH', 'PUT', 'TRACE']
)
def test_every_other_method_is_405_with_the_route_methods(client, method):
    response = client.simulate_request(method, '/things')
    assert response.status_code == 405
    assert response.headers['allow'] == 'POST'
    if method != 'HEAD':
        assert 'not allowed' in _message(client, response)


@pytest.mark.parametrize(
    'header,status,version',
    [
        (None, 200, '1.0'),
        ('1.7', 200, '1.7'),
        ('latest', 200, '1.9'),
        ('1.10', 406, None),
        ('0.9', 406, None),
        ('1.x', 400, None),
        ('1.05', 400, None),
    ],
)
def test_microversion_negotiation(client, header, status, version):
    headers = {}
    if header:
        headers['OpenStack-API-Version'] = '%s %s' % (client.style, header)
    response = client.simulate_get('/things/a', headers=headers)
    assert response.status_code == status
    if version:
        assert response.json['version'] == version
        assert response.headers['openstack-api-version'] == '%s %s' % (
            client.style,
            version,
        )
        assert 'OpenStack-API-Version' in response.headers['vary']


def test_noauth2_identity_and_admin(client):
    body = client.simulate_get('/things/a').json
    assert (body['user'], body['project'], body['admin']) == (
        'alice',
        'proj',
        False,
    )
    body = client.simulate_get(
        '/things/a', headers={'X-Auth-Token': 'admin'}
    ).json
    assert body['admin'] is True and body['project'] == 'admin'
    assert (
        client.simulate_get(
            '/things/a', headers={'X-Auth-Token': ''}
        ).status_code
        == 401
    )
    assert client.simulate_get('/').status_code == 200  # public


def test_inbound_request_id_becomes_the_global_request_id(client):
    inbound = 'req-2f1f1c56-8c3b-4d5c-9d6e-0123456789ab'
    body = client.simulate_get(
        '/things/a', headers={'X-Openstack-Request-Id': inbound}
    ).json
    assert body['global'] == inbound
    body = client.simulate_get(
        '/things/a', headers={'X-Openstack-Request-Id': 'not-an-id'}
    ).json
    assert body['global'] is None


@pytest.mark.parametrize(
    'body,content_type,status,needle',
    [
        ('{"name": "abc"}', 'application/json', 200, None),
        ('{"name": "abc"', 'application/json', 400, 'Malformed JSON'),
        ('{}', 'application/json', 400, "'name' is a required property"),
        ('{"name": "toolong"}', 'application/json', 400, "at 'name'"),
        ('{"name": "a", "size": 0}', 'application/json', 400, "at 'size'"),
        (
            '{"name": "a", "x": 1}',
            'application/json',
            400,
            "'x' was unexpected",
        ),
        ('{"name": "a"}', 'text/plain', 415, 'text/plain'),
        ('', 'application/json', 400, 'None is not of type'),
    ],
)
def test_body_validation(client, body, content_type, status, needle):
    response = client.simulate_post(
        '/things', body=body, headers={'Content-Type': content_type}
    )
    assert response.status_code == status
    if needle:
        assert needle in _message(client, response)


def test_version_compares_with_strings_and_tuples():
    v = microversion.Version(1, 10)
    assert v > '1.9' and v >= (1, 10) and v < microversion.Version(1, 11)
    assert v.matches('1.10', '1.39') and not v.matches('1.11')
    with pytest.raises(ValueError):
        microversion.Version.parse('1.01')
