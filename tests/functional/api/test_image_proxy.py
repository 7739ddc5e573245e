"""The compute API's image proxy (GET/DELETE /v2.1/images/{id}), which
Tempest's stable-rescue tests use at 2.1 to wait for a snapshot."""

import json
import uuid as uuidlib


def test_proxy_shows_an_image_in_the_compute_shape_up_to_2_35(api):
    server = str(uuidlib.uuid4())
    image_id = api.add_image(
        properties={'instance_uuid': server, 'hw_rescue_bus': 'scsi'},
        status='active',
        min_ram=64,
        min_disk=1,
        size=4096,
        owner='demo',
        visibility='private',
    )
    r = api.req('GET', '/v2.1/images/%s' % image_id, version='2.35')
    assert r.status_code == 200, r.text
    image = r.json['image']
    assert image['id'] == image_id
    assert (image['status'], image['progress']) == ('ACTIVE', 100)
    assert (image['minRam'], image['minDisk']) == (64, 1)
    assert image['OS-EXT-IMG-SIZE:size'] == 4096
    assert image['metadata']['hw_rescue_bus'] == 'scsi'
    assert image['server']['id'] == server
    assert image['server']['links'][0]['href'].endswith('/servers/' + server)
    assert image['links'][0]['href'].endswith('/v2.1/images/' + image_id)
    assert image['created'] and image['updated']
    # 2.36 deprecated the proxy: 404 from there on
    r = api.req('GET', '/v2.1/images/%s' % image_id, version='2.36')
    assert r.status_code == 404, r.text


def test_proxy_shows_a_snapshot_being_written_as_saving(api):
    image_id = api.add_image(status='saving', owner='demo')
    r = api.req('GET', '/v2.1/images/%s' % image_id)
    assert r.status_code == 200, r.text
    image = r.json['image']
    assert (image['status'], image['progress']) == ('SAVING', 50)
    assert 'server' not in image


def test_proxy_hides_another_projects_private_image_and_deletes(api):
    image_id = api.add_image(
        status='active', owner='demo', visibility='private'
    )
    assert (
        api.req('GET', '/v2.1/images/%s' % image_id, user='other').status_code
        == 404
    )
    r = api.req('DELETE', '/v2.1/images/%s' % image_id, version='2.36')
    assert r.status_code == 404, r.text
    r = api.req('DELETE', '/v2.1/images/%s' % image_id)
    assert r.status_code == 204, r.text
    assert api.req('GET', '/v2.1/images/%s' % image_id).status_code == 404
    assert api.req('GET', '/v2/images/%s' % image_id).status_code == 404


def test_patch_takes_glances_v2_0_media_type(api):
    """Tempest sets hw_rescue_bus with {"add": "/hw_rescue_bus", ...}."""
    image_id = api.add_image(status='active', owner='demo')

    def patch(ops):
        headers = dict(
            api.headers(),
            **{'Content-Type': 'application/openstack-images-v2.0-json-patch'},
        )
        return api.client.simulate_request(
            'PATCH',
            '/v2/images/%s' % image_id,
            headers=headers,
            body=json.dumps(ops),
        )

    r = patch([{'add': '/hw_rescue_bus', 'value': 'scsi'}])
    assert r.status_code == 200, r.text
    assert r.json['hw_rescue_bus'] == 'scsi'
    r = patch([{'remove': '/hw_rescue_bus'}])
    assert r.status_code == 200, r.text
    assert 'hw_rescue_bus' not in r.json
    # one operation per entry, named by its key
    r = patch([{'add': '/a', 'remove': '/b', 'value': 1}])
    assert r.status_code == 400, r.text
