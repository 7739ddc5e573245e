"""createBackup through the REST API of a whole in-process cloud: backup
images typed and filtered as Glance shows them, the rotation keeping the
newest of a type, the states, the instance action and its event, the
schema, policy and the 409 of a wrong state."""

import pytest
import requests

from nimbus.allinone import client as client_mod
from tests.functional.test_server_actions import ADMIN
from tests.functional.test_server_actions import OTHER
from tests.functional.test_server_actions import READER
from tests.functional.test_server_actions import Api
from tests.functional.test_server_actions import _conflict


@pytest.fixture
def api(make_cloud):
    return Api(make_cloud(hosts=1))


def _images(api, **params):
    response = requests.get(
        client_mod.root_url(api.cloud.api_url) + '/image/v2/images',
        params=params,
        headers={'X-Auth-Token': 'u1:p1', 'X-Roles': 'member,reader'},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return response.json()['images']


def _backup(api, uuid, name, rotation, kind='daily', version='2.45'):
    response = api.action(
        uuid,
        {
            'createBackup': {
                'name': name,
                'backup_type': kind,
                'rotation': rotation,
                'metadata': {'why': 'test'},
            }
        },
        version=version,
    )
    assert response.status_code == 202, response.text
    api.wait(uuid, 'ACTIVE')
    return response


def test_backups_rotate_keeping_the_newest_of_their_type(api):
    uuid = api.boot()
    first = _backup(api, uuid, 'b1', 2).json()['image_id']
    second = _backup(api, uuid, 'b2', 2).json()['image_id']
    weekly = _backup(api, uuid, 'w1', 1, kind='weekly').json()['image_id']
    mine = {
        'image_type': 'backup',
        'backup_type': 'daily',
        'instance_uuid': uuid,
        'sort_key': 'created_at',
        'sort_dir': 'asc',
    }
    found = _images(api, status='active', **mine)
    assert [i['id'] for i in found] == [first, second]
    assert found[0]['why'] == 'test' and found[0]['visibility'] == 'private'
    # The third daily backup pushes the first out; the weekly one stays.
    third = _backup(api, uuid, 'b3', 2).json()['image_id']
    assert [i['id'] for i in _images(api, **mine)] == [second, third]
    assert [
        i['id']
        for i in _images(api, image_type='backup', backup_type='weekly')
    ] == [weekly]
    # Rotation 0 keeps none of the type, as Nova ends.
    _backup(api, uuid, 'b4', 0)
    assert _images(api, **mine) == []
    # A snapshot is no backup and is never rotated.
    assert _images(api, image_type='backup', instance_uuid='nope') == []
    # Every image has no import task (Glance 2.12's tasks route).
    tasks = requests.get(
        client_mod.root_url(api.cloud.api_url)
        + '/image/v2/images/%s/tasks' % weekly,
        headers={'X-Auth-Token': 'u1:p1', 'X-Roles': 'member,reader'},
        timeout=30,
    )
    assert (tasks.status_code, tasks.json()) == (200, {'tasks': []})
    actions = api.call('GET', '/servers/%s/os-instance-actions' % uuid).json()[
        'instanceActions'
    ]
    assert [a['action'] for a in actions][:2] == [
        'createBackup',
        'createBackup',
    ]
    detail = api.call(
        'GET',
        '/servers/%s/os-instance-actions/%s'
        % (uuid, actions[0]['request_id']),
        who=ADMIN,
        version='2.51',
    ).json()['instanceAction']
    assert [(e['event'], e['result']) for e in detail['events']] == [
        ('compute_backup_instance', 'Success')
    ]


def test_below_2_45_the_backup_is_named_by_location(api):
    uuid = api.boot()
    response = _backup(api, uuid, 'old', 1, version='2.44')
    assert response.text == ''
    image_id = response.headers['Location'].rsplit('/', 1)[-1]
    assert [i['id'] for i in _images(api, instance_uuid=uuid)] == [image_id]


def test_bad_bodies_policy_and_state(api):
    uuid = api.boot()
    for body in (
        {'name': 'x', 'backup_type': 'daily'},
        {'name': 'x', 'backup_type': 'daily', 'rotation': -1},
        {'name': 'x', 'backup_type': 'daily', 'rotation': 'two'},
        {'name': 'x', 'rotation': 1},
        {'name': 'x', 'backup_type': 'daily', 'rotation': 1, 'extra': 1},
    ):
        response = api.action(uuid, {'createBackup': body})
        assert response.status_code == 400, (body, response.text)
    good = {'createBackup': {'name': 'x', 'backup_type': 'd', 'rotation': 1}}
    assert api.action(uuid, good, who=OTHER).status_code == 404
    assert api.action(uuid, good, who=READER).status_code == 403
    assert _images(api, instance_uuid=uuid) == []
    api.action(uuid, {'rescue': None})
    api.wait(uuid, 'RESCUE')
    assert 'createBackup' in _conflict(api.action(uuid, good))
