"""Server actions through the REST API of a whole in-process cloud: each
action's states to its end, Nova's 409s (wrong state, locked server),
policy, schemas, and the instance actions with their events."""

import time

import pytest
import requests

from nimbus import services
from nimbus.allinone import client as client_mod
from nimbus.common import context

MEMBER = ('u1', 'p1', 'member,reader')
READER = ('u2', 'p1', 'reader')
OTHER = ('u3', 'p2', 'member,reader')
ADMIN = ('admin', 'admin', 'admin,member,reader')


class Api:
    def __init__(self, cloud):
        self.cloud = cloud
        self.url = client_mod.root_url(cloud.api_url) + '/v2.1'
        self.admin = client_mod.ComputeClient(cloud.api_url)
        self.flavor = self.admin.create_flavor('m1.small', 1, 512, 1)
        self.image = self.admin.create_image('cirros')

    def call(self, method, path, body=None, who=MEMBER, version='2.73'):
        user, project, roles = who
        return requests.request(
            method,
            self.url + path,
            json=body,
            headers={
                'X-Auth-Token': '%s:%s' % (user, project),
                'X-Roles': roles,
                'OpenStack-API-Version': 'compute %s' % version,
            },
            timeout=30,
        )

    def action(self, uuid, body, who=MEMBER, version='2.73'):
        return self.call(
            'POST', '/servers/%s/action' % uuid, body, who, version
        )

    def show(self, uuid, who=ADMIN, version='2.73'):
        response = self.call('GET', '/servers/%s' % uuid, None, who, version)
        assert response.status_code == 200, response.text
        return response.json()['server']

    def wait(self, uuid, status, bound=60):
        """The server once it shows ``status`` with no task (a bound, not
        a timing assertion: the loop ends as soon as it is there)."""
        seen = []
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline:
            server = self.show(uuid)
            state = (server['status'], server['OS-EXT-STS:task_state'])
            if not seen or seen[-1] != state:
                seen.append(state)
            if state == (status, None):
                return server, seen
            if state == ('ERROR', None) and status != 'ERROR':
                break
            time.sleep(0.05)
        raise AssertionError('%s never %s: %s' % (uuid, status, seen))

    def boot(self, who=MEMBER):
        response = self.call(
            'POST',
            '/servers',
            {
                'server': {
                    'name': 'vm',
                    'flavorRef': self.flavor['id'],
                    'imageRef': self.image['id'],
                    'networks': 'none',
                }
            },
            who,
        )
        assert response.status_code == 202, response.text
        uuid = response.json()['server']['id']
        self.wait(uuid, 'ACTIVE')
        return uuid


@pytest.fixture
def api(make_cloud):
    return Api(make_cloud(hosts=2))


def _conflict(response):
    assert response.status_code == 409, response.text
    return response.json()['conflictingRequest']['message']


def test_stop_start_reboot_to_their_final_states(api):
    uuid = api.boot()
    assert api.action(uuid, {'os-stop': None}).status_code == 202
    server, _ = api.wait(uuid, 'SHUTOFF')
    assert server['OS-EXT-STS:vm_state'] == 'stopped'
    assert server['OS-EXT-STS:power_state'] == 4
    assert 'vm_state stopped' in _conflict(api.action(uuid, {'os-stop': None}))
    assert 'vm_state stopped' in _conflict(
        api.action(uuid, {'reboot': {'type': 'SOFT'}})
    )
    assert api.action(uuid, {'os-start': None}).status_code == 202
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-STS:power_state'] == 1
    _conflict(api.action(uuid, {'os-start': None}))
    for kind in ('SOFT', 'hard'):
        response = api.action(uuid, {'reboot': {'type': kind}})
        assert response.status_code == 202, response.text
        server, _ = api.wait(uuid, 'ACTIVE')
        assert server['OS-EXT-STS:power_state'] == 1
    # A hard reboot of a stopped server starts it.
    api.action(uuid, {'os-stop': None})
    api.wait(uuid, 'SHUTOFF')
    assert api.action(uuid, {'reboot': {'type': 'HARD'}}).status_code == 202
    api.wait(uuid, 'ACTIVE')

    actions = api.call('GET', '/servers/%s/os-instance-actions' % uuid)
    assert actions.status_code == 200, actions.text
    names = [a['action'] for a in actions.json()['instanceActions']]
    assert names == [
        'reboot',
        'stop',
        'reboot',
        'reboot',
        'start',
        'stop',
        'create',
    ]
    create = actions.json()['instanceActions'][-1]
    assert create['user_id'] == 'u1' and create['project_id'] == 'p1'
    first = actions.json()['instanceActions'][-2]
    assert first['instance_uuid'] == uuid and first['user_id'] == 'u1'
    shown = api.call(
        'GET',
        '/servers/%s/os-instance-actions/%s' % (uuid, first['request_id']),
        who=ADMIN,
        version='2.84',
    )
    assert shown.status_code == 200, shown.text
    action = shown.json()['instanceAction']
    assert action['action'] == 'stop'
    (event,) = action['events']
    assert event['event'] == 'compute_stop_instance'
    assert event['result'] == 'Success'
    assert event['finish_time']
    assert event['host'] == api.show(uuid)['OS-EXT-SRV-ATTR:host']
    assert 'traceback' in event and 'details' in event
    # The owner sees the events (2.51) without traceback or host.
    mine = api.call(
        'GET',
        '/servers/%s/os-instance-actions/%s' % (uuid, first['request_id']),
        version='2.84',
    ).json()['instanceAction']
    assert [e['event'] for e in mine['events']] == ['compute_stop_instance']
    assert not {'traceback', 'host', 'details'} & set(mine['events'][0])
    assert mine['events'][0]['hostId']
    missing = api.call(
        'GET', '/servers/%s/os-instance-actions/req-nope' % uuid
    )
    assert missing.status_code == 404


def test_pause_suspend_and_their_conflicts(api):
    uuid = api.boot()
    assert api.action(uuid, {'pause': None}).status_code == 202
    server, _ = api.wait(uuid, 'PAUSED')
    assert server['OS-EXT-STS:power_state'] == 3
    _conflict(api.action(uuid, {'suspend': None}))
    _conflict(api.action(uuid, {'pause': None}))
    assert api.action(uuid, {'unpause': None}).status_code == 202
    api.wait(uuid, 'ACTIVE')
    _conflict(api.action(uuid, {'resume': None}))
    assert api.action(uuid, {'suspend': None}).status_code == 202
    server, _ = api.wait(uuid, 'SUSPENDED')
    assert server['OS-EXT-STS:power_state'] == 7
    _conflict(api.action(uuid, {'unpause': None}))
    assert api.action(uuid, {'resume': None}).status_code == 202
    api.wait(uuid, 'ACTIVE')


def test_lock_refuses_the_owner_but_not_an_admin(api):
    uuid = api.boot()
    response = api.action(uuid, {'lock': {'locked_reason': 'maintenance'}})
    assert response.status_code == 202, response.text
    server = api.show(uuid, MEMBER)
    assert server['locked'] is True
    assert server['locked_reason'] == 'maintenance'
    assert 'locked' in _conflict(api.action(uuid, {'os-stop': None}))
    assert 'locked' in _conflict(api.call('DELETE', '/servers/%s' % uuid))
    # An admin acts on a locked server.
    assert api.action(uuid, {'os-stop': None}, ADMIN).status_code == 202
    api.wait(uuid, 'SHUTOFF')
    assert api.action(uuid, {'unlock': None}).status_code == 202
    assert api.show(uuid, MEMBER)['locked'] is False
    # What an admin of another project locked, the owner cannot unlock.
    assert api.action(uuid, {'lock': None}, ADMIN).status_code == 202
    assert api.action(uuid, {'unlock': None}).status_code == 403
    assert api.action(uuid, {'unlock': None}, ADMIN).status_code == 202
    # Below 2.73 the lock takes no reason, and below 2.9 no `locked`.
    response = api.action(
        uuid, {'lock': {'locked_reason': 'x'}}, version='2.72'
    )
    assert response.status_code == 400
    assert 'locked' not in api.show(uuid, version='2.8')
    names = [
        a['action']
        for a in api.call(
            'GET', '/servers/%s/os-instance-actions' % uuid
        ).json()['instanceActions']
    ]
    assert names == ['unlock', 'lock', 'unlock', 'stop', 'lock', 'create']


def test_reset_state_is_for_admins(api):
    uuid = api.boot()
    body = {'os-resetState': {'state': 'error'}}
    assert api.action(uuid, body).status_code == 403
    assert api.action(uuid, body, ADMIN).status_code == 202
    server = api.show(uuid)
    assert (server['status'], server['OS-EXT-STS:task_state']) == (
        'ERROR',
        None,
    )
    _conflict(api.action(uuid, {'os-start': None}))
    response = api.action(uuid, {'os-resetState': {'state': 'active'}}, ADMIN)
    assert response.status_code == 202
    assert api.show(uuid)['status'] == 'ACTIVE'
    # From ERROR a stop is allowed (Nova's), and ends SHUTOFF.
    api.action(uuid, body, ADMIN)
    assert api.action(uuid, {'os-stop': None}).status_code == 202
    api.wait(uuid, 'SHUTOFF')


def test_policy_other_project_and_reader(api):
    uuid = api.boot()
    assert api.action(uuid, {'os-stop': None}, OTHER).status_code == 404
    assert api.action(uuid, {'os-stop': None}, READER).status_code == 403
    assert (
        api.call(
            'GET', '/servers/%s/os-instance-actions' % uuid, who=READER
        ).status_code
        == 200
    )
    assert (
        api.call(
            'GET', '/servers/%s/os-instance-actions' % uuid, who=OTHER
        ).status_code
        == 404
    )
    assert api.call('GET', '/servers/%s/diagnostics' % uuid).status_code == (
        403
    )


# Bodies the schemas refuse (checked before the server is looked up, so
# no server is needed).
BAD_BODIES = [
    {'reboot': {'type': 'WARM'}},
    {'reboot': {}},
    {'reboot': None},
    {'os-stop': 'now'},
    {'os-resetState': {'state': 'stopped'}},
    {'os-resetState': None},
    {'changePassword': {}},
    {'rebuild': {}},
    {'rebuild': {'imageRef': 'x', 'bogus': 1}},
    {'os-getConsoleOutput': {'length': 'ten'}},
    {'rescue': {'rescue_image_ref': 'not-a-uuid'}},
    {'frobnicate': None},
    {'os-stop': None, 'os-start': None},
    [],
    'os-stop',
]


def test_bad_bodies_are_400(api):
    uuid = '00000000-0000-0000-0000-000000000001'
    for body in BAD_BODIES:
        response = api.action(uuid, body, ADMIN)
        assert response.status_code == 400, (body, response.text)
        assert response.json()['badRequest']['message'], body


def test_rebuild_with_a_new_image_key_and_description(api):
    uuid = api.boot()
    response = api.call(
        'POST', '/os-keypairs', {'keypair': {'name': 'k1'}}, version='2.10'
    )
    assert response.status_code in (200, 201), response.text
    new_image = api.admin.create_image('ubuntu')
    body = {
        'rebuild': {
            'imageRef': new_image['id'],
            'name': 'rebuilt',
            'description': 'fresh',
            'key_name': 'k1',
            'user_data': 'ZWNobyBoaQ==',
            'metadata': {'role': 'web'},
            'preserve_ephemeral': True,
        }
    }
    response = api.action(uuid, body, version='2.75')
    assert response.status_code == 202, response.text
    shown = response.json()['server']
    assert shown['status'] == 'REBUILD'
    assert shown['image']['id'] == new_image['id']
    assert shown['adminPass']
    # 2.75: the full view (key_name, the extended status...).
    assert shown['key_name'] == 'k1'
    assert 'OS-EXT-STS:task_state' in shown
    # The user data under its own name (2.57), not the extended one's.
    assert shown['user_data'] == 'ZWNobyBoaQ=='
    assert 'OS-EXT-SRV-ATTR:user_data' not in shown
    server, seen = api.wait(uuid, 'ACTIVE')
    assert (server['name'], server['description']) == ('rebuilt', 'fresh')
    assert server['metadata'] == {'role': 'web'}
    assert server['image']['id'] == new_image['id']
    shown = api.show(uuid, version='2.57')
    assert shown['OS-EXT-SRV-ATTR:user_data'] == 'ZWNobyBoaQ=='
    assert shown['key_name'] == 'k1'
    # Below 2.75 the answer is trimmed as Nova's.
    response = api.action(
        uuid, {'rebuild': {'imageRef': api.image['id']}}, version='2.74'
    )
    assert response.status_code == 202, response.text
    assert response.json()['server']['key_name'] == 'k1'
    assert response.json()['server']['user_data'] == 'ZWNobyBoaQ=='
    assert 'OS-EXT-STS:task_state' not in response.json()['server']
    api.wait(uuid, 'ACTIVE')
    response = api.action(
        uuid, {'rebuild': {'imageRef': api.image['id']}}, version='2.53'
    )
    assert response.status_code == 202, response.text
    assert 'key_name' not in response.json()['server']
    assert 'user_data' not in response.json()['server']
    api.wait(uuid, 'ACTIVE')
    # A stopped server is rebuilt and stays stopped.
    api.action(uuid, {'os-stop': None})
    api.wait(uuid, 'SHUTOFF')
    response = api.action(uuid, {'rebuild': {'imageRef': new_image['id']}})
    assert response.status_code == 202, response.text
    server, _ = api.wait(uuid, 'SHUTOFF')
    assert server['OS-EXT-STS:power_state'] == 4
    events = [
        a['action']
        for a in api.call(
            'GET', '/servers/%s/os-instance-actions' % uuid
        ).json()['instanceActions']
    ]
    assert events[0] == 'rebuild' and events.count('rebuild') == 4


def test_rebuild_refuses_an_image_the_host_does_not_fit(api):
    uuid = api.boot()
    arm = api.admin.create_image('arm', {'hw_architecture': 'aarch64'})
    response = api.action(uuid, {'rebuild': {'imageRef': arm['id']}})
    assert response.status_code == 400, response.text
    assert 'aarch64' in response.json()['badRequest']['message']
    needs = api.admin.create_image(
        'gpu', {'trait:CUSTOM_NO_SUCH_TRAIT': 'required'}
    )
    response = api.action(uuid, {'rebuild': {'imageRef': needs['id']}})
    assert response.status_code == 400, response.text
    assert 'CUSTOM_NO_SUCH_TRAIT' in response.json()['badRequest']['message']
    x86 = api.admin.create_image('x86', {'hw_architecture': 'x86_64'})
    response = api.action(uuid, {'rebuild': {'imageRef': x86['id']}})
    assert response.status_code == 202, response.text
    api.wait(uuid, 'ACTIVE')
    response = api.action(
        uuid,
        {'rebuild': {'imageRef': api.image['id'], 'key_name': 'nope'}},
        version='2.54',
    )
    assert response.status_code == 400, response.text
    missing = '00000000-0000-0000-0000-0000000000aa'
    assert api.action(
        uuid, {'rebuild': {'imageRef': missing}}
    ).status_code == (400)


def test_rescue_console_password_and_diagnostics(api):
    uuid = api.boot()
    response = api.action(uuid, {'rescue': None})
    assert response.status_code == 200, response.text
    assert response.json()['adminPass']
    api.wait(uuid, 'RESCUE')
    _conflict(api.action(uuid, {'rescue': None}))
    assert api.action(uuid, {'unrescue': None}).status_code == 202
    api.wait(uuid, 'ACTIVE')
    response = api.action(uuid, {'changePassword': {'adminPass': 's3cret'}})
    assert response.status_code == 202, response.text
    api.wait(uuid, 'ACTIVE')
    # Nova's tail: 4 pieces between newlines, the last one empty.
    response = api.action(uuid, {'os-getConsoleOutput': {'length': 4}})
    assert response.status_code == 200, response.text
    assert len(response.json()['output'].split('\n')) == 4
    lines = response.json()['output'].splitlines()
    assert len(lines) == 3
    assert 'password set' in lines[-1] and 'rescue' in lines[0]
    full = api.action(uuid, {'os-getConsoleOutput': {'length': -1}})
    assert 'booted' in full.json()['output']
    diag = api.call(
        'GET', '/servers/%s/diagnostics' % uuid, who=ADMIN, version='2.48'
    )
    assert diag.status_code == 200, diag.text
    body = diag.json()
    assert body['state'] == 'running' and body['driver'] == 'libvirt'
    assert body['num_cpus'] == 1 and len(body['cpu_details']) == 1
    assert body['memory_details']['maximum'] == 512
    legacy = api.call(
        'GET', '/servers/%s/diagnostics' % uuid, who=ADMIN, version='2.47'
    )
    assert 'cpu0_time' in legacy.json()
    events = {
        a['action']
        for a in api.call(
            'GET', '/servers/%s/os-instance-actions' % uuid
        ).json()['instanceActions']
    }
    assert events == {'create', 'rescue', 'unrescue', 'changePassword'}


def _soft_cloud(make_cloud, interval):
    return Api(
        make_cloud(
            hosts=1,
            overrides={'DEFAULT': {'reclaim_instance_interval': interval}},
        )
    )


def test_soft_delete_restore_and_force_delete(make_cloud):
    api = _soft_cloud(make_cloud, 3600)
    uuid = api.boot()
    response = api.call('DELETE', '/servers/%s' % uuid)
    assert response.status_code == 204, response.text
    server, _ = api.wait(uuid, 'SOFT_DELETED')
    assert server['OS-EXT-STS:power_state'] == 4
    _conflict(api.action(uuid, {'os-start': None}))
    assert api.action(uuid, {'restore': None}, OTHER).status_code == 404
    assert api.action(uuid, {'restore': None}).status_code == 202
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-STS:power_state'] == 1
    _conflict(api.action(uuid, {'forceDelete': None}))
    api.call('DELETE', '/servers/%s' % uuid)
    api.wait(uuid, 'SOFT_DELETED')
    assert api.action(uuid, {'forceDelete': None}).status_code == 202
    _wait_gone(api, uuid)
    assert _allocations(api, uuid) == {}


def _wait_gone(api, uuid, bound=60):
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if api.call('GET', '/servers/%s' % uuid, who=ADMIN).status_code == 404:
            return
        time.sleep(0.05)
    raise AssertionError('%s was never deleted' % uuid)


def test_the_compute_reclaims_soft_deleted_servers(make_cloud):
    api = _soft_cloud(make_cloud, 1)
    uuid = api.boot()
    assert api.call('DELETE', '/servers/%s' % uuid).status_code == 204
    # Soft-deleted (the test above proves it), then gone with no other
    # request: the compute's reclaim deleted it.
    _wait_gone(api, uuid)
    assert _allocations(api, uuid) == {}


def _allocations(api, uuid):
    response = services.placement(api.cloud.conf).request(
        context.get_admin_context(), 'GET', '/allocations/%s' % uuid
    )
    assert response.status_code == 200, response.text
    return response.json()['allocations']


def test_create_image_snapshots_into_a_bootable_private_image(api):
    uuid = api.boot()
    body = {'createImage': {'name': 'snap', 'metadata': {'backup': 'yes'}}}
    response = api.action(uuid, body, version='2.45')
    assert response.status_code == 202, response.text
    image_id = response.json()['image_id']
    api.wait(uuid, 'ACTIVE')
    image = requests.get(
        client_mod.root_url(api.cloud.api_url)
        + '/image/v2/images/'
        + image_id,
        headers={'X-Auth-Token': 'u1:p1', 'X-Roles': 'member,reader'},
        timeout=30,
    )
    assert image.status_code == 200, image.text
    shown = image.json()
    assert (shown['name'], shown['status'], shown['visibility']) == (
        'snap',
        'active',
        'private',
    )
    assert shown['image_type'] == 'snapshot'
    assert shown['instance_uuid'] == uuid and shown['backup'] == 'yes'
    # Another project cannot see it; its owner boots from it.
    other = requests.get(
        client_mod.root_url(api.cloud.api_url)
        + '/image/v2/images/'
        + image_id,
        headers={'X-Auth-Token': 'u3:p2', 'X-Roles': 'member,reader'},
        timeout=30,
    )
    assert other.status_code == 404
    response = api.call(
        'POST',
        '/servers',
        {
            'server': {
                'name': 'from-snap',
                'flavorRef': api.flavor['id'],
                'imageRef': image_id,
                'networks': 'none',
            }
        },
    )
    assert response.status_code == 202, response.text
    api.wait(response.json()['server']['id'], 'ACTIVE')
    # Below 2.45 the image is named by the Location header.
    response = api.action(
        uuid, {'createImage': {'name': 'snap2'}}, version='2.44'
    )
    assert response.status_code == 202, response.text
    assert response.headers['Location'].rsplit('/', 2)[-2] == 'images'
    api.wait(uuid, 'ACTIVE')
    api.action(uuid, {'rescue': None})
    api.wait(uuid, 'RESCUE')
    _conflict(api.action(uuid, {'createImage': {'name': 'snap3'}}))
    shown = api.call('GET', '/servers/%s/os-instance-actions' % uuid).json()[
        'instanceActions'
    ]
    assert [a['action'] for a in shown][:3] == [
        'rescue',
        'createImage',
        'createImage',
    ]
