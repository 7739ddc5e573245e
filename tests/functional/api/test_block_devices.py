"""Block device mappings read the way Nova reads them: only a boot_index 0
mapping whose destination is a volume makes a server boot from volume; an
image copied to local disk takes DISK_GB from the flavor."""

import pytest

from nimbus.api.handlers import server_create_body
from nimbus.common.objects import request_spec as spec_obj
from nimbus.scheduler import request_filters


@pytest.fixture
def world(api):
    api.add_flavor('1', 'm1.small', root_gb=20)
    api.image = api.add_image()
    api.add_compute('host1')
    return api


def _image_bdm(image, **extra):
    return dict(
        {
            'uuid': image,
            'boot_index': 0,
            'source_type': 'image',
            'destination_type': 'local',
            'delete_on_termination': True,
        },
        **extra,
    )


def _boot(api, **server):
    body = {'server': dict({'name': 'vm', 'flavorRef': '1'}, **server)}
    r = api.req('POST', '/v2.1/servers', body)
    assert r.status_code == 202, r.json
    return api.conductor.calls[-1][1]


def _disk_gb(api, spec):
    query = request_filters.Query()
    request_filters.flavor_resources(
        query, spec_obj.RequestSpec.from_primitive(spec), api.conf, []
    )
    return query.group('').resources.get('DISK_GB')


def test_image_to_local_disk_is_not_boot_from_volume(world):
    # What `openstack server create --image` sends.
    spec = _boot(
        world,
        imageRef=world.image,
        block_device_mapping_v2=[_image_bdm(world.image)],
    )
    assert spec['is_bfv'] is False
    assert spec['image']['id'] == world.image
    assert _disk_gb(world, spec) == 20


def test_image_from_the_root_mapping_when_there_is_no_image_ref(world):
    spec = _boot(
        world,
        block_device_mapping_v2=[_image_bdm(world.image, boot_index='0')],
    )
    assert spec['is_bfv'] is False
    assert spec['image']['id'] == world.image
    assert _disk_gb(world, spec) == 20


@pytest.mark.parametrize(
    'root',
    [
        {
            'boot_index': 0,
            'source_type': 'volume',
            'destination_type': 'volume',
            'uuid': 'f0f0f0f0-0000-4000-8000-000000000001',
        },
        {
            'boot_index': '0',
            'source_type': 'image',
            'destination_type': 'volume',
            'volume_size': 10,
        },
        {
            'boot_index': 0,
            'source_type': 'volume',
            'uuid': 'f0f0f0f0-0000-4000-8000-000000000001',
        },
    ],
)
def test_a_volume_root_is_boot_from_volume(world, root):
    if root.get('source_type') == 'image':
        root = dict(root, uuid=world.image)
    spec = _boot(world, block_device_mapping_v2=[root])
    assert spec['is_bfv'] is True
    assert _disk_gb(world, spec) is None


def test_a_local_blank_disk_beside_an_image_is_not_a_root(world):
    spec = _boot(
        world,
        imageRef=world.image,
        block_device_mapping_v2=[
            {
                'boot_index': -1,
                'source_type': 'blank',
                'destination_type': 'local',
                'volume_size': 1,
            }
        ],
    )
    assert spec['is_bfv'] is False
    assert _disk_gb(world, spec) == 20


def test_no_image_and_no_volume_root_is_400(world):
    body = {
        'server': {
            'name': 'vm',
            'flavorRef': '1',
            'block_device_mapping_v2': [
                {
                    'boot_index': -1,
                    'source_type': 'blank',
                    'destination_type': 'local',
                }
            ],
        }
    }
    assert world.req('POST', '/v2.1/servers', body).status_code == 400


@pytest.mark.parametrize(
    'bdms, root',
    [
        (None, None),
        ([], None),
        (
            [{'boot_index': 1}, {'boot_index': '0', 'x': 1}],
            {'boot_index': '0', 'x': 1},
        ),
        ([{'boot_index': None}], None),
    ],
)
def test_root_bdm(bdms, root):
    assert server_create_body.root_bdm(bdms) == root
