"""Placement mounted under a prefix (``SCRIPT_NAME=/placement``, as devstack
serves it): links (root-relative) and ``location`` headers (absolute, as
Placement's) carry the prefix, and both ``/placement`` and ``/placement/``
are the version document."""

import wsgiref.util

import orjson
import pytest

from tests.functional.placement import fixtures

PREFIX = '/placement'
HOST = 'http://falconframework.org'  # falcon.testing's default host
RP = '74000000-0000-0000-0000-000000000001'


@pytest.fixture
def client(tmp_path):
    with fixtures.admin_client(tmp_path) as client:
        yield client


def _call(client, method, path, body=None, version=None):
    headers = {}
    if version:
        headers['OpenStack-API-Version'] = 'placement %s' % version
    return client.simulate_request(
        method,
        path,
        root_path=PREFIX,
        headers=headers,
        body=None if body is None else orjson.dumps(body),
    )


def test_version_document_at_the_mount_point(client):
    response = _call(client, 'GET', '/')
    assert response.status_code == 200
    assert response.json['versions'][0]['max_version'] == '1.39'
    # ``/placement`` itself: an empty PATH_INFO.
    environ = {}
    wsgiref.util.setup_testing_defaults(environ)
    environ.update(SCRIPT_NAME=PREFIX, PATH_INFO='', REQUEST_METHOD='GET')
    captured = []
    body = b''.join(
        client.app(
            environ, lambda status, headers, exc=None: captured.append(status)
        )
    )
    assert captured == ['200 OK']
    assert orjson.loads(body)['versions'][0]['min_version'] == '1.0'


def test_provider_links_and_location_carry_the_prefix(client):
    response = _call(
        client, 'POST', '/resource_providers', {'name': 'p1', 'uuid': RP}
    )
    assert response.status_code == 200
    base = '%s/resource_providers/%s' % (PREFIX, RP)
    assert response.headers['location'] == HOST + base
    expected = {
        'self': base,
        'inventories': base + '/inventories',
        'usages': base + '/usages',
        'aggregates': base + '/aggregates',
        'traits': base + '/traits',
        'allocations': base + '/allocations',
    }
    assert {
        link['rel']: link['href'] for link in response.json['links']
    } == expected
    shown = _call(client, 'GET', '/resource_providers/' + RP).json
    assert {link['rel']: link['href'] for link in shown['links']} == expected
    listed = _call(client, 'GET', '/resource_providers').json
    assert listed['resource_providers'][0]['links'][0]['href'] == base
    old = _call(
        client, 'POST', '/resource_providers', {'name': 'p2'}, version='1.19'
    )
    assert old.status_code == 201
    assert old.headers['location'].startswith(
        HOST + PREFIX + '/resource_providers/'
    )


def test_inventory_location_carries_the_prefix(client):
    _call(client, 'POST', '/resource_providers', {'name': 'p1', 'uuid': RP})
    response = _call(
        client,
        'POST',
        '/resource_providers/%s/inventories' % RP,
        {'resource_class': 'VCPU', 'total': 2},
    )
    assert response.status_code == 201
    assert response.headers['location'] == (
        '%s%s/resource_providers/%s/inventories/VCPU' % (HOST, PREFIX, RP)
    )


def test_resource_class_links_and_locations_carry_the_prefix(client):
    response = _call(
        client, 'POST', '/resource_classes', {'name': 'CUSTOM_GOLD'}
    )
    assert response.status_code == 201
    assert response.headers['location'] == (
        HOST + PREFIX + '/resource_classes/CUSTOM_GOLD'
    )
    for status in (201, 204):
        response = _call(client, 'PUT', '/resource_classes/CUSTOM_IRON')
        assert response.status_code == status
        assert response.headers['location'] == (
            HOST + PREFIX + '/resource_classes/CUSTOM_IRON'
        )
    shown = _call(client, 'GET', '/resource_classes/VCPU').json
    assert shown['links'] == [
        {'rel': 'self', 'href': PREFIX + '/resource_classes/VCPU'}
    ]
    listed = _call(client, 'GET', '/resource_classes').json
    assert all(
        rc['links'][0]['href']
        == '%s/resource_classes/%s' % (PREFIX, rc['name'])
        for rc in listed['resource_classes']
    )


def test_trait_location_carries_the_prefix(client):
    for status in (201, 204):
        response = _call(client, 'PUT', '/traits/CUSTOM_FAST')
        assert response.status_code == status
        assert response.headers['location'] == (
            HOST + PREFIX + '/traits/CUSTOM_FAST'
        )


def test_without_a_prefix(client):
    response = client.simulate_post(
        '/resource_classes', body=orjson.dumps({'name': 'CUSTOM_X'})
    )
    assert response.headers['location'] == HOST + '/resource_classes/CUSTOM_X'
    shown = client.simulate_get('/resource_classes/CUSTOM_X').json
    assert shown['links'][0]['href'] == '/resource_classes/CUSTOM_X'
