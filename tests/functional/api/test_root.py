"""Version discovery, microversion headers and authentication."""


def test_versions_public(api):
    r = api.client.simulate_get('/')
    assert r.status_code == 200
    # Nova lists the legacy v2.0 beside v2.1.
    v20, v21 = r.json['versions']
    assert v20['id'] == 'v2.0' and v20['status'] == 'SUPPORTED'
    assert v21['id'] == 'v2.1' and v21['min_version'] == '2.1'
    assert v21['version'] == '2.96'
    r = api.client.simulate_get('/v2.1')
    assert r.json['version']['status'] == 'CURRENT'
    assert api.client.simulate_get('/v2.1/').status_code == 200


def test_microversion_headers(api):
    r = api.req('GET', '/v2.1/flavors', version='2.55')
    assert r.headers['OpenStack-API-Version'] == 'compute 2.55'
    assert r.headers['X-OpenStack-Nova-API-Version'] == '2.55'
    assert 'OpenStack-API-Version' in r.headers['Vary']
    r = api.req('GET', '/v2.1/flavors')
    assert r.headers['OpenStack-API-Version'] == 'compute 2.1'
    r = api.req(
        'GET',
        '/v2.1/flavors',
        headers={'X-OpenStack-Nova-API-Version': '2.20'},
    )
    assert r.headers['OpenStack-API-Version'] == 'compute 2.20'
    r = api.req('GET', '/v2.1/flavors', version='latest')
    assert r.headers['OpenStack-API-Version'] == 'compute 2.96'
    assert r.headers['x-openstack-request-id'].startswith('req-')
    assert r.headers['x-compute-request-id'].startswith('req-')


def test_microversion_out_of_range(api):
    r = api.req('GET', '/v2.1/flavors', version='2.200')
    assert r.status_code == 406
    assert 'notAcceptable' in r.json
    r = api.req('GET', '/v2.1/flavors', version='2.x')
    assert r.status_code == 400
    assert r.json['badRequest']['code'] == 400


def test_auth_required(api):
    r = api.client.simulate_get('/v2.1/flavors')
    assert r.status_code == 401
    assert 'unauthorized' in r.json


def test_unknown_path_is_404(api):
    r = api.req('GET', '/v2.1/nothing-here')
    assert r.status_code == 404


def test_method_not_allowed(api):
    r = api.req('PATCH', '/v2.1/servers')
    assert r.status_code == 405


def test_non_json_body_is_415(api):
    r = api.client.simulate_post(
        '/v2.1/servers',
        body='x',
        headers=dict(api.headers(), **{'Content-Type': 'text/plain'}),
    )
    assert r.status_code == 415


def test_malformed_json_is_400(api):
    r = api.client.simulate_post(
        '/v2.1/servers',
        body='{"server": ',
        headers=dict(api.headers(), **{'Content-Type': 'application/json'}),
    )
    assert r.status_code == 400
    assert 'Malformed JSON' in r.json['badRequest']['message']
