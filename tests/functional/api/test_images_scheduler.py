"""The /v2/images subset and the scheduler explain endpoints."""

import http.server
import json
import threading
import urllib.parse
import uuid as uuidlib

import pytest

from nimbus.allinone import client as client_mod
from nimbus.common import db as common_db
from nimbus.db.api import models as api_models
from tests.functional.api import fixtures as api_fixtures
from tests.functional.scheduler import fixtures as fx


def test_images_crud(api):
    r = api.req(
        'POST',
        '/v2/images',
        {
            'name': 'cirros',
            'disk_format': 'qcow2',
            'container_format': 'bare',
            'min_ram': 64,
            'hw_architecture': 'x86_64',
            'img_hv_type': 'fake',
        },
    )
    assert r.status_code == 201
    image = r.json
    assert image['status'] == 'active' and image['owner'] == 'demo'
    assert image['hw_architecture'] == 'x86_64'
    assert image['visibility'] == 'shared'
    assert r.headers['Location'] == '/v2/images/%s' % image['id']
    r = api.req('GET', '/v2/images/%s' % image['id'])
    assert r.json['min_ram'] == 64
    r = api.req(
        'PUT',
        '/v2/images/%s' % image['id'],
        {'hw_architecture': 'aarch64', 'img_hv_type': None, 'name': 'cirros2'},
    )
    assert r.json['hw_architecture'] == 'aarch64'
    assert 'img_hv_type' not in r.json and r.json['name'] == 'cirros2'
    r = api.client.simulate_patch(
        '/v2/images/%s' % image['id'],
        body='[{"op": "add", "path": "/hw_cpu_cores", "value": "4"},'
        ' {"op": "remove", "path": "/hw_architecture"},'
        ' {"op": "replace", "path": "/name", "value": "c3"}]',
        headers=dict(
            api.headers(),
            **{'Content-Type': 'application/openstack-images-v2.1-json-patch'},
        ),
    )
    assert r.status_code == 200, r.json
    assert r.json['hw_cpu_cores'] == '4' and r.json['name'] == 'c3'
    assert 'hw_architecture' not in r.json
    r = api.req('GET', '/v2/images')
    assert [i['id'] for i in r.json['images']] == [image['id']]
    assert api.req('GET', '/v2/images', user='other').json['images'] == []
    assert (
        api.req('GET', '/v2/images/%s' % image['id'], user='other').status_code
        == 404
    )
    assert api.req('DELETE', '/v2/images/%s' % image['id']).status_code == 204
    assert api.req('GET', '/v2/images/%s' % image['id']).status_code == 404


def test_images_bad(api):
    assert api.req('POST', '/v2/images', {'min_ram': -1}).status_code == 400
    assert (
        api.req('POST', '/v2/images', {'disk_format': 'floppy'}).status_code
        == 400
    )
    assert api.req('POST', '/v2/images', {'id': 'nope'}).status_code == 400
    assert api.req('POST', '/v2/images', {'status': 'x'}).status_code == 403
    assert api.req('POST', '/v2/images', {'prop': 5}).status_code == 400
    assert (
        api.req('POST', '/v2/images', {'visibility': 'public'}).status_code
        == 403
    )
    fixed = str(uuidlib.uuid4())
    assert (
        api.admin(
            'POST', '/v2/images', {'id': fixed, 'visibility': 'public'}
        ).status_code
        == 201
    )
    assert api.admin('POST', '/v2/images', {'id': fixed}).status_code == 409
    assert (
        api.req('PUT', '/v2/images/%s' % fixed, {'a': 'b'}).status_code == 403
    )
    assert api.req('GET', '/v2/images/%s' % fixed).status_code == 200
    assert api.req('GET', '/v2/images?visibility=bogus').status_code == 400
    assert api.req('GET', '/v2/images/%s' % uuidlib.uuid4()).status_code == 404


def test_dry_run(api):
    api.add_flavor('1', extra_specs={'hw:cpu_policy': 'dedicated'})
    image = api.add_image(properties={'hw_architecture': 'x86_64'})
    url = '/v2.1/os-scheduler/dry-run'
    body = {
        'flavorRef': '1',
        'imageRef': image,
        'scheduler_hints': {'different_host': str(uuidlib.uuid4())},
        'availability_zone': 'nova',
        'num_instances': 2,
    }
    assert api.req('POST', url, body).status_code == 403
    r = api.admin('POST', url, body)
    assert r.status_code == 200
    assert r.json['dry_run']['ranked'][0]['host'] == 'host1'
    ((_, spec),) = api.scheduler.calls
    assert spec['flavor']['extra_specs'] == {'hw:cpu_policy': 'dedicated'}
    assert spec['image']['properties'] == {'hw_architecture': 'x86_64'}
    assert spec['num_instances'] == 2 and spec['instance_uuids'] == []
    assert len(spec['scheduler_hints']['different_host']) == 1
    assert api.conductor.calls == []
    assert api.admin('POST', url, {'flavorRef': '9'}).status_code == 400
    assert api.admin('POST', url, {}).status_code == 400
    assert (
        api.admin('POST', url, {'flavorRef': '1', 'x': 1}).status_code == 400
    )
    api.app.deps.scheduler_api = None
    assert api.admin('POST', url, {'flavorRef': '1'}).status_code == 503


def test_records(api):
    uuid = str(uuidlib.uuid4())
    with api.api_db.session() as s:
        s.add(
            api_models.SchedulingRecord(
                request_id='req-1',
                instance_uuid=uuid,
                outcome='no_valid_host',
                detail={
                    'placement_candidates': 3,
                    'filters': [{'name': 'ComputeFilter', 'in': 3, 'out': 0}],
                },
            )
        )
    url = '/v2.1/os-scheduler/records'
    assert api.req('GET', url + '?instance_uuid=%s' % uuid).status_code == 403
    r = api.admin('GET', url + '?instance_uuid=%s' % uuid)
    (record,) = r.json['records']
    assert record['outcome'] == 'no_valid_host'
    assert record['detail']['filters'][0]['out'] == 0
    r = api.admin('GET', url + '?request_id=req-2')
    assert r.json['records'] == []
    assert api.admin('GET', url).status_code == 400
    assert api.admin('GET', url + '?instance_uuid=nope').status_code == 400


# -- explain through a running cloud ------------------------------------------


def _multi_create(api, name, min_count, max_count, hints=None):
    api.create_server(
        name,
        api.flavor['id'],
        api.image['id'],
        min_count=min_count,
        max_count=max_count,
        hints=hints,
    )
    ids = fx.wait_for(
        lambda: (
            [s['id'] for s in api.servers() if s['name'].startswith(name)]
            if len([s for s in api.servers() if s['name'].startswith(name)])
            == max_count
            else None
        ),
        timeout=30,
        what='servers of %s' % name,
    )
    return fx.settle(api, ids)


@pytest.mark.slow
def test_unplaced_instances_carry_the_schedulers_explanation(make_cloud):
    """min_count 2, max_count 5, anti-affinity on 3 hosts: 3 land, and the
    other 2 say which filter stopped them, with the funnel in the details
    and every rejected host in the admin's record."""
    api = fx.admin_client(make_cloud(hosts=3))
    api.flavor = api.create_flavor('f', 1, 512, 1)
    api.image = api.create_image('img')
    group = fx.create_group(api, 'anti', 'anti-affinity')
    servers = _multi_create(api, 'anti', 2, 5, hints={'group': group['id']})
    active = [s for s in servers.values() if s['status'] == 'ACTIVE']
    failed = [s for s in servers.values() if s['status'] == 'ERROR']
    assert len(active) == 3 and len(failed) == 2
    for server in failed:
        fault = api.server(server['id'])['fault']
        assert fault['message'] == (
            'No valid host was found: placed 3 of 5; placement returned 3 '
            'hosts; ServerGroupAntiAffinityFilter rejected 3'
        )
        details = fault['details']
        assert 'placed 3 of the 5 instances of this request' in details
        assert 'ServerGroupAntiAffinityFilter: 3 in, 0 out' in details
        assert 'Rejected: host-' in details
        assert fx.consumer_allocations(api.cloud, server['id']) == {}
        # The admin reads the full record through the explain endpoint.
        records = api.get(
            '/os-scheduler/records?instance_uuid=%s'
            '&outcome=failed' % server['id']
        )['records']
        (detail,) = [
            r['detail']
            for r in records
            if r['detail'].get('source', '').startswith('dry run')
        ]
        assert detail['placement_candidates'] == 3
        assert detail['placed'] == 3 and detail['requested'] == 5
        assert {r['host'] for r in detail['rejected']} == {
            'host-1',
            'host-2',
            'host-3',
        }
        assert {r['filter'] for r in detail['rejected']} == {
            'ServerGroupAntiAffinityFilter'
        }
        assert detail['message'] == fault['message']
    user = client_mod.ComputeClient(
        api.cloud.api_url, user='u', project='p', roles='member'
    )
    with pytest.raises(RuntimeError, match='403'):
        user.get('/os-scheduler/records?instance_uuid=%s' % failed[0]['id'])


@pytest.mark.slow
def test_capacity_runs_out_mid_request(make_cloud):
    """Two servers fit per host: the scheduler's own explanation says the
    hosts ran out of room as the request went on."""
    cloud = make_cloud(
        hosts=2,
        overrides={
            'fake_driver': {'disk_gb': 10},
            'compute': {'initial_disk_allocation_ratio': 1.0},
        },
    )
    api = fx.admin_client(cloud)
    api.flavor = api.create_flavor('f', 1, 512, 4)
    api.image = api.create_image('img')
    servers = _multi_create(api, 'fill', 1, 6)
    failed = [s for s in servers.values() if s['status'] == 'ERROR']
    assert len(failed) == 2
    fault = api.server(failed[0]['id'])['fault']
    assert fault['message'] == (
        'No valid host was found: placed 4 of 6; '
        'placement returned 2 hosts; no capacity '
        'left for another instance'
    )
    details = fault['details']
    assert 'this one did not fit. Why: placement returned 2 hosts' in details
    for host in ('host-1', 'host-2'):
        assert (
            '%s: ResourceCapacity: no capacity left for another '
            'instance' % host
        ) in details


def test_no_valid_host_message_names_the_worst_filter(make_cloud):
    api = fx.admin_client(make_cloud(hosts=2))
    flavor = api.create_flavor(
        'avx512',
        1,
        512,
        1,
        extra_specs={'capabilities:cpu_info:features': '<all-in> avx512f'},
    )
    image = api.create_image('img')
    server = fx.boot_and_settle(api, 'doomed', flavor, image)
    assert server['status'] == 'ERROR'
    fault = api.server(server['id'])['fault']
    assert fault['message'] == (
        'No valid host was found: placement returned '
        '2 hosts; ComputeCapabilitiesFilter '
        'rejected 2'
    )
    assert 'ComputeCapabilitiesFilter: 2 in, 0 out' in fault['details']


def test_image_properties_the_scheduler_does_not_implement(api):
    api.add_flavor()
    mixed = api.add_image(properties={'hw_cpu_policy': 'mixed'})
    body = {'server': {'name': 'vm', 'flavorRef': '1', 'imageRef': mixed}}
    r = api.req('POST', '/v2.1/servers', body)
    assert r.status_code == 400
    assert r.json['badRequest']['message'] == (
        "Image %s: image property hw_cpu_policy: 'mixed' is not implemented "
        'by the Nimbus scheduler (it implements shared, dedicated)' % mixed
    )
    r = api.admin(
        'POST',
        '/v2.1/os-scheduler/dry-run',
        {'flavorRef': '1', 'imageRef': mixed},
    )
    assert r.status_code == 400
    assert api.conductor.calls == [] and api.scheduler.calls == []
    pinned = api.add_image(properties={'hw_cpu_policy': 'dedicated'})
    body['server']['imageRef'] = pinned
    assert api.req('POST', '/v2.1/servers', body).status_code == 202


# -- device profiles -----------------------------------------------------------


@pytest.fixture
def accelerator_api(tmp_path):
    """A stub accelerator API (Cyborg's device_profiles) over real HTTP, and
    a compute API configured to use it."""
    profiles = {
        'gpu-nvidia-t4': [
            {
                'resources:PGPU': '1',
                'trait:CUSTOM_GPU_PRODUCT_ID_1EB8': 'required',
            },
            {'resources:PGPU': '2', 'trait:CUSTOM_SLOW': 'forbidden'},
        ]
    }
    asked = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            name = urllib.parse.parse_qs(url.query).get('name', [''])[0]
            asked.append((url.path, name))
            found = (
                [{'name': name, 'groups': profiles[name]}]
                if name in profiles
                else []
            )
            body = json.dumps({'device_profiles': found}).encode()
            self.send_response(200)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fixture = api_fixtures.ApiFixture(
        tmp_path,
        overrides={
            'accelerator_client': {
                'endpoint': 'http://127.0.0.1:%d/v2' % server.server_address[1]
            }
        },
    )
    fixture.asked = asked
    try:
        yield fixture
    finally:
        server.shutdown()
        server.server_close()
        common_db.dispose_all()


def test_device_profile_without_accelerator_service_is_refused(api):
    api.add_flavor('gpu', extra_specs={'accel:device_profile': 'gpu-t4'})
    image = api.add_image()
    r = api.req(
        'POST',
        '/v2.1/servers',
        {'server': {'name': 'vm', 'flavorRef': 'gpu', 'imageRef': image}},
    )
    assert r.status_code == 400
    assert r.json['badRequest']['message'] == (
        'Flavor gpu requests device profile gpu-t4 but no accelerator '
        'service is configured.'
    )
    assert api.conductor.calls == []
    assert api.req('GET', '/v2.1/servers').json['servers'] == []
    r = api.admin('POST', '/v2.1/os-scheduler/dry-run', {'flavorRef': 'gpu'})
    assert r.status_code == 400


def test_device_profile_groups_become_request_groups(accelerator_api):
    api = accelerator_api
    api.add_flavor(
        'gpu', extra_specs={'accel:device_profile': 'gpu-nvidia-t4'}
    )
    image = api.add_image()
    r = api.req(
        'POST',
        '/v2.1/servers',
        {'server': {'name': 'vm', 'flavorRef': 'gpu', 'imageRef': image}},
    )
    assert r.status_code == 202, r.json
    ((_ctx, spec, _uuids),) = api.conductor.calls
    assert api.asked == [('/v2/device_profiles', 'gpu-nvidia-t4')]
    assert spec['device_profile'] == 'gpu-nvidia-t4'
    assert spec['requested_resources'] == [
        {
            'requester_id': 'device_profile_0',
            'resources': {'PGPU': 1},
            'required_traits': ['CUSTOM_GPU_PRODUCT_ID_1EB8'],
            'forbidden_traits': [],
        },
        {
            'requester_id': 'device_profile_1',
            'resources': {'PGPU': 2},
            'required_traits': [],
            'forbidden_traits': ['CUSTOM_SLOW'],
        },
    ]
    # An unknown profile is the user's mistake.
    api.add_flavor(
        'nope',
        name='nope',
        extra_specs={'accel:device_profile': 'no-such-profile'},
    )
    r = api.req(
        'POST',
        '/v2.1/servers',
        {'server': {'name': 'vm', 'flavorRef': 'nope', 'imageRef': image}},
    )
    assert r.status_code == 400
    assert r.json['badRequest']['message'] == (
        'Flavor nope requests device profile no-such-profile: device '
        'profile no-such-profile not found'
    )
    # A flavor without a profile never asks the accelerator service.
    api.add_flavor('plain', name='plain')
    r = api.req(
        'POST',
        '/v2.1/servers',
        {'server': {'name': 'vm', 'flavorRef': 'plain', 'imageRef': image}},
    )
    assert r.status_code == 202
    assert len(api.asked) == 2
    assert api.conductor.calls[-1][1]['requested_resources'] == []


# -- the default availability zone ---------------------------------------------


def _zones_seen(api):
    """The default zone as os-availability-zone, os-services and POST
    /servers see it (the zone POST /servers accepts reaches the spec)."""
    r = api.req('GET', '/v2.1/os-availability-zone')
    listed = [z['zoneName'] for z in r.json['availabilityZoneInfo']]
    r = api.admin('GET', '/v2.1/os-services?binary=nimbus-compute')
    services = sorted({s['zone'] for s in r.json['services']})
    return listed, services


def _boot(api, image, zone):
    body = {
        'server': {
            'name': 'vm',
            'flavorRef': '1',
            'imageRef': image,
            'availability_zone': zone,
        }
    }
    return api.req('POST', '/v2.1/servers', body)


def test_default_zone_is_the_schedulers(tmp_path):
    """Zone listing, os-services and POST /servers all follow
    ``[scheduler] default_availability_zone``, the zone the scheduler
    applies; a zone the API accepts is one the scheduler honours."""
    api = api_fixtures.ApiFixture(
        tmp_path,
        overrides={'scheduler': {'default_availability_zone': 'az-default'}},
    )
    try:
        api.add_flavor()
        image = api.add_image()
        api.add_compute('host1')
        assert _zones_seen(api) == (['az-default'], ['az-default'])
        assert _boot(api, image, 'az-default').status_code == 202
        assert api.conductor.calls[-1][1]['availability_zone'] == 'az-default'
        r = _boot(api, image, 'nova')
        assert r.status_code == 400
        assert 'nova' in r.json['badRequest']['message']
    finally:
        common_db.dispose_all()


def test_the_deprecated_api_option_still_takes_effect(tmp_path):
    """A config file that sets the zone under ``[api]`` (the option's old
    home) sets ``[scheduler] default_availability_zone``: the API and the
    scheduler both use it."""
    api = api_fixtures.ApiFixture(
        tmp_path, config_text='[api]\ndefault_availability_zone = az-old\n'
    )
    try:
        assert api.conf.scheduler.default_availability_zone == 'az-old'
        api.add_flavor()
        image = api.add_image()
        api.add_compute('host1')
        assert _zones_seen(api) == (['az-old'], ['az-old'])
        assert _boot(api, image, 'az-old').status_code == 202
        assert _boot(api, image, 'nova').status_code == 400
    finally:
        common_db.dispose_all()


def test_the_scheduler_option_wins_over_the_deprecated_one(tmp_path):
    api = api_fixtures.ApiFixture(
        tmp_path,
        config_text=(
            '[api]\ndefault_availability_zone = az-old\n'
            '[scheduler]\ndefault_availability_zone = az-new\n'
        ),
    )
    try:
        assert api.conf.scheduler.default_availability_zone == 'az-new'
        api.add_compute('host1')
        assert _zones_seen(api) == (['az-new'], ['az-new'])
    finally:
        common_db.dispose_all()
