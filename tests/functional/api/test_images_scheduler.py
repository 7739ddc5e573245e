"""The /v2/images subset and the scheduler explain endpoints."""

import uuid as uuidlib

from nimbus.db.api import models as api_models


def test_images_crud(api):
    r = api.req('POST', '/v2/images', {
        'name': 'cirros', 'disk_format': 'qcow2', 'container_format': 'bare',
        'min_ram': 64, 'hw_architecture': 'x86_64',
        'img_hv_type': 'fake'})
    assert r.status_code == 201
    image = r.json
    assert image['status'] == 'active' and image['owner'] == 'demo'
    assert image['hw_architecture'] == 'x86_64'
    assert image['visibility'] == 'shared'
    assert r.headers['Location'] == '/v2/images/%s' % image['id']
    r = api.req('GET', '/v2/images/%s' % image['id'])
    assert r.json['min_ram'] == 64
    r = api.req('PUT', '/v2/images/%s' % image['id'], {
        'hw_architecture': 'aarch64', 'img_hv_type': None,
        'name': 'cirros2'})
    assert r.json['hw_architecture'] == 'aarch64'
    assert 'img_hv_type' not in r.json and r.json['name'] == 'cirros2'
    r = api.client.simulate_patch(
        '/v2/images/%s' % image['id'],
        body='[{"op": "add", "path": "/hw_cpu_cores", "value": "4"},'
             ' {"op": "remove", "path": "/hw_architecture"},'
             ' {"op": "replace", "path": "/name", "value": "c3"}]',
        headers=dict(api.headers(), **{
            'Content-Type':
                'application/openstack-images-v2.1-json-patch'}))
    assert r.status_code == 200, r.json
    assert r.json['hw_cpu_cores'] == '4' and r.json['name'] == 'c3'
    assert 'hw_architecture' not in r.json
    r = api.req('GET', '/v2/images')
    assert [i['id'] for i in r.json['images']] == [image['id']]
    assert api.req('GET', '/v2/images', user='other').json['images'] == []
    assert api.req('GET', '/v2/images/%s' % image['id'],
                   user='other').status_code == 404
    assert api.req('DELETE', '/v2/images/%s' % image['id']) \
        .status_code == 204
    assert api.req('GET', '/v2/images/%s' % image['id']).status_code == 404


def test_images_bad(api):
    assert api.req('POST', '/v2/images', {'min_ram': -1}).status_code == 400
    assert api.req('POST', '/v2/images', {'disk_format': 'floppy'}) \
        .status_code == 400
    assert api.req('POST', '/v2/images', {'id': 'nope'}).status_code == 400
    assert api.req('POST', '/v2/images', {'status': 'x'}).status_code == 403
    assert api.req('POST', '/v2/images', {'prop': 5}).status_code == 400
    assert api.req('POST', '/v2/images', {'visibility': 'public'}) \
        .status_code == 403
    fixed = str(uuidlib.uuid4())
    assert api.admin('POST', '/v2/images', {'id': fixed,
                                            'visibility': 'public'}) \
        .status_code == 201
    assert api.admin('POST', '/v2/images', {'id': fixed}).status_code == 409
    assert api.req('PUT', '/v2/images/%s' % fixed, {'a': 'b'}) \
        .status_code == 403
    assert api.req('GET', '/v2/images/%s' % fixed).status_code == 200
    assert api.req('GET', '/v2/images?visibility=bogus').status_code == 400
    assert api.req('GET', '/v2/images/%s' % uuidlib.uuid4()) \
        .status_code == 404


def test_dry_run(api):
    api.add_flavor('1', extra_specs={'hw:cpu_policy': 'dedicated'})
    image = api.add_image(properties={'hw_architecture': 'x86_64'})
    url = '/v2.1/os-scheduler/dry-run'
    body = {'flavorRef': '1', 'imageRef': image,
            'scheduler_hints': {'different_host': str(uuidlib.uuid4())},
            'availability_zone': 'nova', 'num_instances': 2}
    assert api.req('POST', url, body).status_code == 403
    r = api.admin('POST', url, body)
    assert r.status_code == 200
    assert r.json['dry_run']['ranked'][0]['host'] == 'host1'
    (_, spec), = api.scheduler.calls
    assert spec['flavor']['extra_specs'] == {'hw:cpu_policy': 'dedicated'}
    assert spec['image']['properties'] == {'hw_architecture': 'x86_64'}
    assert spec['num_instances'] == 2 and spec['instance_uuids'] == []
    assert len(spec['scheduler_hints']['different_host']) == 1
    assert api.conductor.calls == []
    assert api.admin('POST', url, {'flavorRef': '9'}).status_code == 400
    assert api.admin('POST', url, {}).status_code == 400
    assert api.admin('POST', url, {'flavorRef': '1', 'x': 1}) \
        .status_code == 400
    api.app.deps.scheduler_api = None
    assert api.admin('POST', url, {'flavorRef': '1'}).status_code == 503


def test_records(api):
    uuid = str(uuidlib.uuid4())
    with api.api_db.session() as s:
        s.add(api_models.SchedulingRecord(
            request_id='req-1', instance_uuid=uuid, outcome='no_valid_host',
            detail={'placement_candidates': 3, 'filters': [
                {'name': 'ComputeFilter', 'in': 3, 'out': 0}]}))
    url = '/v2.1/os-scheduler/records'
    assert api.req('GET', url + '?instance_uuid=%s' % uuid) \
        .status_code == 403
    r = api.admin('GET', url + '?instance_uuid=%s' % uuid)
    (record,) = r.json['records']
    assert record['outcome'] == 'no_valid_host'
    assert record['detail']['filters'][0]['out'] == 0
    r = api.admin('GET', url + '?request_id=req-2')
    assert r.json['records'] == []
    assert api.admin('GET', url).status_code == 400
    assert api.admin('GET', url + '?instance_uuid=nope').status_code == 400
