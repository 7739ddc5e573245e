"""Discovery documents, microversions 2.0..2.3, the /accelerator prefix,
the body size limit and error bodies."""

import pytest

from tests.functional.accelerator.conftest import ADMIN
from tests.functional.accelerator.conftest import error_text


@pytest.mark.parametrize('path', ['/', '/accelerator'])
def test_root_discovery_needs_no_token(api, path):
    response = api.get(path, headers={})
    assert response.status_code == 200
    body = response.json
    assert set(body) == {'name', 'description', 'versions', 'default_version'}
    assert body['default_version']['id'] == 'v2'
    [version] = body['versions']
    assert set(version) == {
        'id',
        'status',
        'min_version',
        'max_version',
        'links',
    }
    assert (version['min_version'], version['max_version']) == ('2.0', '2.3')
    assert version['status'] == 'CURRENT'
    assert version['links'][0]['href'].endswith(
        ('/accelerator/v2' if path == '/accelerator' else '/v2')
    )


@pytest.mark.parametrize(
    'path', ['/v2', '/v2/', '/accelerator/v2', '/accelerator/v2/']
)
def test_v2_discovery(api, path):
    response = api.get(path, headers={})
    assert response.status_code == 200
    body = response.json
    assert set(body) == {'id', 'status', 'min_version', 'max_version', 'links'}
    assert body['id'] == 'v2.0' and body['max_version'] == '2.3'
    assert body['links'] == [
        {
            'href': 'http://falconframework.org' + path.rstrip('/') + '/',
            'rel': 'self',
        }
    ]


def test_default_version_is_2_0(api):
    response = api.get('/v2/device_profiles')
    assert response.headers['OpenStack-API-Version'] == 'accelerator 2.0'


@pytest.mark.parametrize('version', ['2.0', '2.1', '2.2', '2.3'])
def test_supported_versions_are_echoed(api, version):
    response = api.get('/v2/device_profiles', version=version)
    assert response.status_code == 200
    assert (
        response.headers['OpenStack-API-Version'] == 'accelerator ' + version
    )


def test_latest_is_2_3(api):
    response = api.get('/v2/device_profiles', version='latest')
    assert response.headers['OpenStack-API-Version'] == 'accelerator 2.3'


@pytest.mark.parametrize('version', ['1.0', '2.4', '3.0'])
def test_versions_outside_the_range_are_406(api, version):
    response = api.get('/v2/device_profiles', version=version)
    assert response.status_code == 406
    assert 'supported 2.0 to 2.3' in error_text(response)


@pytest.mark.parametrize(
    'header',
    [
        'accelerator two',
        'accelerator foo',
        'accelerator 2',
        'compute 2.1',
        'placement 1.39',
        'two',
    ],
)
def test_an_unusable_version_header_is_406_as_from_cyborg(api, header):
    response = api.get(
        '/v2/device_profiles',
        headers=dict(ADMIN, **{'OpenStack-API-Version': header}),
    )
    assert response.status_code == 406
    assert 'supported: 2.0 to 2.3' in error_text(response)
    assert response.headers['OpenStack-API-Minimum-Version'] == '2.0'
    assert response.headers['OpenStack-API-Maximum-Version'] == '2.3'


def test_a_bare_version_is_taken_as_cyborg_does(api):
    response = api.get(
        '/v2/devices/11111111-0000-4000-8000-000000000000',
        headers=dict(ADMIN, **{'OpenStack-API-Version': '2.3'}),
    )
    assert response.status_code == 200
    assert response.headers['OpenStack-API-Version'] == 'accelerator 2.3'
    assert 'status' in response.json


@pytest.mark.parametrize(
    'method,path,headers,status',
    [
        ('GET', '/', {}, 200),
        ('GET', '/v2/', {}, 200),
        ('GET', '/v2/device_profiles', ADMIN, 200),
        ('GET', '/v2/device_profiles', {}, 401),
        ('GET', '/v2/nothing', ADMIN, 404),
        ('PUT', '/v2/device_profiles', ADMIN, 405),
        ('POST', '/v2/device_profiles', ADMIN, 415),
        ('GET', '/v2/devices', {'X-Auth-Token': 'alice:p1'}, 403),
    ],
)
def test_every_answer_says_the_version_range(
    api, method, path, headers, status
):
    response = api.request(method, path, headers=headers)
    assert response.status_code == status
    assert response.headers['OpenStack-API-Minimum-Version'] == '2.0'
    assert response.headers['OpenStack-API-Maximum-Version'] == '2.3'


def test_every_route_is_also_under_the_prefix(api):
    created = api.profile('prefixed')
    response = api.get('/accelerator/v2/device_profiles/' + created['uuid'])
    assert response.status_code == 200
    assert response.json['device_profile']['links'][0]['href'].endswith(
        '/accelerator/v2/device_profiles/' + created['uuid']
    )
    for path in (
        '/accelerator/v2/accelerator_requests',
        '/accelerator/v2/devices',
        '/accelerator/v2/deployables',
    ):
        assert api.get(path).status_code == 200


def test_no_token_is_401(api):
    response = api.get('/v2/device_profiles', headers={})
    assert response.status_code == 401
    assert 'X-Auth-Token' in error_text(response)


def test_unknown_path_is_404_and_wrong_method_405(api):
    assert api.get('/v2/nothing').status_code == 404
    response = api.request('PUT', '/v2/device_profiles')
    assert response.status_code == 405
    assert response.headers['allow'] == 'GET, POST, DELETE'


def test_a_body_over_the_limit_is_413(api):
    groups = [{'accel:pad%d' % i: 'x' * 50} for i in range(60)]
    response = api.post(
        '/v2/device_profiles', [{'name': 'big', 'groups': groups}]
    )
    assert response.status_code == 413
    assert 'max_request_body_size' in error_text(response)


def test_error_bodies_are_cyborg_shaped(api):
    response = api.post(
        '/v2/device_profiles',
        [{'groups': [{'resources:FPGA': 1}]}],
        headers=ADMIN,
    )
    assert response.status_code == 400
    assert set(response.json) == {'error_message'}
    assert "'name' is a required property" in error_text(response)
