"""The images API as Glance answers it: version discovery at /image and
/v2, image data upload (PUT .../file) and lookups by name, over HTTP with
openstacksdk as the openstack CLI uses it."""

import hashlib

import pytest

from nimbus.common import wsgi
from nimbus.testing import infra

openstack = infra.require_module('openstack')


@pytest.fixture
def api_state(tmp_path):
    from tests.functional.api import fixtures

    state = tmp_path / 'state'
    fixture = fixtures.ApiFixture(
        tmp_path, overrides={'DEFAULT': {'state_path': str(state)}}
    )
    fixture.state = state
    return fixture


@pytest.fixture
def server(api_state):
    srv = wsgi.serve(api_state.app, '127.0.0.1', 0, threads=4, name='test-api')
    yield srv
    srv.stop()


@pytest.mark.parametrize(
    'path, href',
    [
        ('/image', '/image/v2/'),
        ('/image/', '/image/v2/'),
        ('/image/v2', '/image/v2/'),
        ('/image/v2/', '/image/v2/'),
    ],
)
def test_versions_documents_need_no_token(api_state, path, href):
    r = api_state.client.simulate_get(path)
    assert r.status_code == 200, r.text
    versions = r.json['versions']
    assert versions[0]['status'] == 'CURRENT'
    assert versions[0]['id'].startswith('v2.')
    assert all(v['links'][0]['href'].endswith(href) for v in versions)


@pytest.mark.parametrize('path', ['/v2', '/v2/'])
def test_root_v2_is_the_compute_v2_0_document_not_the_images_one(
    api_state, path
):
    """The v2.0 link of GET / leads to compute's v2.0 (as in Nova); the
    images API's documents live under /image, its catalog endpoint."""
    r = api_state.client.simulate_get(path)
    assert r.status_code == 200, r.text
    assert r.json['version']['id'] == 'v2.0'
    assert r.json['version']['links'][0]['href'].endswith('/v2/')


def test_the_compute_root_lists_the_compute_versions_only(api_state):
    """Nova's v2.0 and v2.1; the images API's versions live under
    /image."""
    r = api_state.client.simulate_get('/')
    assert sorted(v['id'] for v in r.json['versions']) == ['v2.0', 'v2.1']


def test_upload_stores_data_and_checksums(api_state):
    api = api_state
    r = api.req(
        'POST',
        '/image/v2/images',
        {'name': 'up', 'disk_format': 'raw', 'container_format': 'bare'},
    )
    assert r.status_code == 201
    image_id = r.json['id']
    assert r.json['size'] is None and r.json['checksum'] is None
    data = b'nimbus' * 50000
    headers = dict(
        api.headers(), **{'Content-Type': 'application/octet-stream'}
    )
    r = api.client.simulate_put(
        '/image/v2/images/%s/file' % image_id, body=data, headers=headers
    )
    assert r.status_code == 204, r.text
    image = api.req('GET', '/v2/images/%s' % image_id).json
    assert image['status'] == 'active'
    assert image['size'] == len(data)
    assert image['checksum'] == hashlib.md5(data).hexdigest()
    assert image['os_hash_algo'] == 'sha512'
    assert image['os_hash_value'] == hashlib.sha512(data).hexdigest()
    stored = api.state / 'images' / image_id
    assert stored.read_bytes() == data
    r = api.req('GET', '/v2/images/%s/file' % image_id)
    assert r.status_code == 200 and r.content == data
    # A second upload is refused, as Glance refuses it.
    r = api.client.simulate_put(
        '/v2/images/%s/file' % image_id, body=b'x', headers=headers
    )
    assert r.status_code == 409
    # Other projects cannot upload to it.
    other = dict(
        api.headers(user='other'),
        **{'Content-Type': 'application/octet-stream'},
    )
    assert (
        api.client.simulate_put(
            '/v2/images/%s/file' % image_id, body=b'x', headers=other
        ).status_code
        == 404
    )
    assert api.req('DELETE', '/v2/images/%s' % image_id).status_code == 204
    assert not stored.exists()


def test_upload_needs_octet_stream_and_no_data_is_204(api_state):
    api = api_state
    image_id = api.req('POST', '/v2/images', {'name': 'x'}).json['id']
    assert api.req('GET', '/v2/images/%s/file' % image_id).status_code == 204
    r = api.client.simulate_put(
        '/v2/images/%s/file' % image_id, body=b'x', headers=api.headers()
    )
    assert r.status_code == 415


def _connect(url, token, image_endpoint):
    return openstack.connection.Connection(
        auth_type='admin_token',
        auth={'endpoint': url + '/v2.1', 'token': token},
        compute_endpoint_override=url + '/v2.1',
        image_endpoint_override=image_endpoint,
    )


@pytest.mark.parametrize('suffix', ['/image', '/v2'])
def test_openstacksdk_discovers_the_images_api(api_state, server, suffix):
    conn = _connect(server.url, 'demo', server.url + suffix)
    data = b'\0' * 4096
    image = conn.image.create_image(
        name='blob', data=data, disk_format='raw', container_format='bare'
    )
    found = conn.image.find_image('blob')
    assert found is not None and found.id == image.id
    shown = conn.image.get_image(image.id)
    assert shown.status == 'active' and shown.size == len(data)
    assert shown.checksum == hashlib.md5(data).hexdigest()
    assert [i.name for i in conn.image.images()] == ['blob']
    # The compute API finds the image by id as a server's imageRef.
    api_state.add_flavor('1', 'm1.small')
    conn.compute.create_server(
        name='vm', flavor_id='1', image_id=image.id, networks='none'
    )


@pytest.mark.parametrize(
    'path', ['/identity', '/identity/v3', '/identity/v3/']
)
def test_noauth2_answers_an_identity_version_document(api_state, path):
    r = api_state.client.simulate_get(path)
    assert r.status_code == 200
    doc = r.json.get('version') or r.json['versions']['values'][0]
    assert doc['id'].startswith('v3.')
    assert doc['links'][0]['href'].endswith('/identity/v3/')


def test_under_keystone_there_is_no_identity_stub(tmp_path):
    from tests.functional.api import fixtures

    fixture = fixtures.ApiFixture(
        tmp_path, overrides={'api': {'auth_strategy': 'keystone'}}
    )
    assert fixture.conf.api.auth_strategy == 'keystone'
    r = fixture.client.simulate_get('/identity/v3')
    assert r.status_code == 404


def test_noauth2_projects_are_what_tokens_name(api_state):
    """``openstack quota set ... PROJECT`` looks the project up in the
    identity API first: by id, then by name."""
    headers = api_state.headers('admin')
    r = api_state.client.simulate_get(
        '/identity/v3/projects/demo-project', headers=headers
    )
    assert r.status_code == 200
    assert r.json['project']['id'] == 'demo-project'
    assert r.json['project']['name'] == 'demo-project'
    assert r.json['project']['links']['self'].endswith(
        '/identity/v3/projects/demo-project'
    )
    r = api_state.client.simulate_get(
        '/identity/v3/projects', params={'name': 'p1'}, headers=headers
    )
    assert [p['id'] for p in r.json['projects']] == ['p1']
    r = api_state.client.simulate_get('/identity/v3/projects', headers=headers)
    assert r.json['projects'] == []
    r = api_state.client.simulate_get(
        '/identity/v3/projects', params={'name': 'x' * 65}, headers=headers
    )
    assert r.status_code == 400
    assert 'Invalid project name' in r.text
    # A token is needed, as for every lookup.
    r = api_state.client.simulate_get('/identity/v3/projects/p1')
    assert r.status_code == 401
