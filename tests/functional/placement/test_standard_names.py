"""The standard names are exactly os-resource-classes' and os-traits'."""

import orjson
import os_resource_classes
import os_traits
import pytest

from tests.functional.placement import fixtures


@pytest.fixture
def client(tmp_path):
    with fixtures.admin_client(tmp_path) as client:
        yield client


def _classes(client):
    response = client.simulate_get('/resource_classes')
    assert response.status_code == 200
    return [rc['name'] for rc in response.json['resource_classes']]


def _traits(client, query=None):
    response = client.simulate_get('/traits', query_string=query)
    assert response.status_code == 200
    return response.json['traits']


def test_resource_classes_are_the_standard_set_then_custom(client):
    assert _classes(client) == list(os_resource_classes.STANDARDS)
    for name in ('CUSTOM_GOLD', 'CUSTOM_IRON'):
        assert (
            client.simulate_post(
                '/resource_classes', body=orjson.dumps({'name': name})
            ).status_code
            == 201
        )
    assert (
        client.simulate_put('/resource_classes/CUSTOM_BRONZE').status_code
        == 201
    )
    assert _classes(client) == list(os_resource_classes.STANDARDS) + [
        'CUSTOM_GOLD',
        'CUSTOM_IRON',
        'CUSTOM_BRONZE',
    ]
    assert (
        client.simulate_delete('/resource_classes/CUSTOM_IRON').status_code
        == 204
    )
    assert _classes(client) == list(os_resource_classes.STANDARDS) + [
        'CUSTOM_GOLD',
        'CUSTOM_BRONZE',
    ]


def test_every_standard_resource_class_can_be_shown(client):
    for name in os_resource_classes.STANDARDS:
        response = client.simulate_get('/resource_classes/' + name)
        assert response.status_code == 200, name
        assert response.json['name'] == name


def test_traits_are_the_standard_set_plus_custom(client):
    standard = set(os_traits.get_traits())
    assert set(_traits(client)) == standard
    assert client.simulate_put('/traits/CUSTOM_FAST').status_code == 201
    listed = _traits(client)
    assert len(listed) == len(set(listed))
    assert set(listed) == standard | {'CUSTOM_FAST'}
    assert _traits(client, 'name=startswith:CUSTOM_') == ['CUSTOM_FAST']


def test_every_standard_trait_exists(client):
    for name in os_traits.get_traits():
        assert client.simulate_get('/traits/' + name).status_code == 204, name
