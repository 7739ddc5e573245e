"""/v2/devices and /v2/deployables: read-only views of the agents'
reports, in Cyborg's shapes; admin or service only."""

import pytest

from tests.functional.accelerator.conftest import DEVICE_KEYS
from tests.functional.accelerator.conftest import HOST
from tests.functional.accelerator.conftest import MEMBER
from tests.functional.accelerator.conftest import SERVICE
from tests.functional.accelerator.conftest import error_text

DEVICE0 = '11111111-0000-4000-8000-000000000000'
DEPLOYABLE0 = '22222222-0000-4000-8000-000000000000'


def test_list_devices(api):
    devices = api.get('/v2/devices').json['devices']
    assert [(d['uuid'], d['type']) for d in devices] == [
        (DEVICE0, 'FPGA'),
        ('11111111-0000-4000-8000-000000000001', 'GPU'),
    ]
    device = devices[0]
    assert set(device) == DEVICE_KEYS
    assert device['hostname'] == HOST and device['vendor'] == '0x8086'
    assert device['links'][0]['href'].endswith('/v2/devices/' + DEVICE0)


def test_status_from_2_3(api):
    assert (
        'status' not in api.get('/v2/devices/' + DEVICE0, version='2.2').json
    )
    assert (
        api.get('/v2/devices/' + DEVICE0, version='2.3').json['status']
        == 'enabled'
    )
    listed = api.get('/v2/devices', version='2.3').json['devices']
    assert {d['status'] for d in listed} == {'enabled'}


def test_filter_devices(api):
    gpus = api.get('/v2/devices', params={'type': 'GPU'}).json['devices']
    assert [d['type'] for d in gpus] == ['GPU']
    assert (
        api.get('/v2/devices', params={'hostname': 'elsewhere'}).json[
            'devices'
        ]
        == []
    )
    response = api.get('/v2/devices', params={'colour': 'red'})
    assert response.status_code == 400
    assert "'colour'" in error_text(response)


def test_show_device(api):
    assert api.get('/v2/devices/' + DEVICE0).json['type'] == 'FPGA'
    response = api.get('/v2/devices/5d5ba3b9-2d58-4ac9-8b3d-2b7c8b0f5a11')
    assert response.status_code == 404


def test_deployables(api):
    deployables = api.get('/v2/deployables').json['deployables']
    assert len(deployables) == 2
    first = deployables[0]
    assert first['uuid'] == DEPLOYABLE0
    assert first['num_accelerators'] == 2
    assert set(first) == {
        'uuid',
        'parent_id',
        'root_id',
        'name',
        'num_accelerators',
        'device_id',
        'attributes_list',
        'rp_uuid',
        'driver_name',
        'bitstream_id',
        'created_at',
        'updated_at',
        'links',
    }
    assert first['attributes_list'] == '[]' and first['bitstream_id'] is None
    assert first['rp_uuid'] == '33333333-0000-4000-8000-000000000000'
    by_rp = api.get(
        '/v2/deployables', params={'rp_uuid': first['rp_uuid']}
    ).json['deployables']
    assert [d['uuid'] for d in by_rp] == [DEPLOYABLE0]
    shown = api.get('/v2/deployables/' + DEPLOYABLE0).json
    assert shown['name'] == first['name']
    assert (
        api.get(
            '/v2/deployables/5d5ba3b9-2d58-4ac9-8b3d-2b7c8b0f5a11'
        ).status_code
        == 404
    )


@pytest.mark.parametrize(
    'path',
    [
        '/v2/devices',
        '/v2/devices/' + DEVICE0,
        '/v2/deployables',
        '/v2/deployables/' + DEPLOYABLE0,
    ],
)
def test_members_may_not_read_devices(api, path):
    assert api.get(path, headers=MEMBER).status_code == 403
    assert api.get(path, headers=SERVICE).status_code == 200


def test_devices_are_read_only(api):
    assert api.post('/v2/devices', {}).status_code == 405
    assert api.delete('/v2/devices/' + DEVICE0).status_code == 405
