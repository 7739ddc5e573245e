"""The dashboard's page and JSON endpoints against a whole cloud in one
process: public page and assets, admin-only data (a member gets 403), the
shapes of hosts, failed builds and capacity, and the decision stream
(server-sent events) carrying a boot's decision."""

import json
import threading
import time

import pytest
import requests

from nimbus.allinone import client as client_mod

API_PATHS = (
    '/dashboard/api/hosts',
    '/dashboard/api/failures',
    '/dashboard/api/capacity?flavor=m1.small',
    '/dashboard/api/decisions',
    '/dashboard/api/events',
)
ADMIN = {'X-Auth-Token': 'admin:admin'}
MEMBER = {'X-Auth-Token': 'demo:demo', 'X-Roles': 'member'}


@pytest.fixture
def cloud(make_cloud):
    cloud = make_cloud(
        hosts=4,
        overrides={
            'DEFAULT': {'report_interval': 1},
            'dashboard': {'cache_ttl': 0, 'keepalive': 0.5},
        },
    )
    api = client_mod.ComputeClient(cloud.api_url)
    cloud.client = api
    cloud.flavor = api.create_flavor('m1.small', 2, 2048, 20)
    cloud.image = api.create_image('cirros')
    return cloud


def _get(cloud, path, headers=ADMIN, **kwargs):
    return requests.get(
        cloud.api_url + path, headers=headers, timeout=30, **kwargs
    )


def _wait_status(api, uuid, wanted=('ACTIVE', 'ERROR'), timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server = api.server(uuid)
        if server['status'] in wanted:
            return server
        time.sleep(0.2)
    raise AssertionError('server %s never reached %s' % (uuid, wanted))


def _boot(cloud, name, flavor=None):
    server = cloud.client.create_server(
        name, (flavor or cloud.flavor)['id'], cloud.image['id']
    )['server']
    return server['id']


def test_page_and_assets_need_no_token(cloud):
    page = requests.get(cloud.api_url + '/dashboard/', timeout=30)
    assert page.status_code == 200
    assert page.headers['content-type'].startswith('text/html')
    assert 'static/dashboard.js' in page.text
    script = requests.get(
        cloud.api_url + '/dashboard/static/dashboard.js', timeout=30
    )
    assert script.status_code == 200
    assert 'javascript' in script.headers['content-type']
    assert 'X-Auth-Token' in script.text
    css = requests.get(
        cloud.api_url + '/dashboard/static/dashboard.css', timeout=30
    )
    assert css.status_code == 200 and 'text/css' in css.headers['content-type']
    moved = requests.get(
        cloud.api_url + '/dashboard', timeout=30, allow_redirects=False
    )
    assert moved.status_code == 301
    assert moved.headers['location'] == '/dashboard/'
    missing = _get(cloud, '/dashboard/static/nothing.js')
    assert missing.status_code == 404
    assert 'nothing.js' in missing.text


@pytest.mark.slow
@pytest.mark.parametrize('path', API_PATHS)
def test_data_is_for_admins(cloud, path):
    assert _get(cloud, path, headers={}).status_code == 401
    denied = _get(cloud, path, headers=MEMBER)
    assert denied.status_code == 403
    assert 'nimbus:dashboard' in denied.text


@pytest.mark.slow
def test_hosts_show_usage_by_resource_class_cell_and_aggregate(cloud):
    api = cloud.client
    agg = api.post('/os-aggregates', {'aggregate': {'name': 'rack-a'}})
    api.post(
        '/os-aggregates/%s/action' % agg['aggregate']['id'],
        {'add_host': {'host': 'host-1'}},
    )
    uuids = [_boot(cloud, 'dash-%d' % n) for n in range(3)]
    placed = [_wait_status(api, u) for u in uuids]
    assert {s['status'] for s in placed} == {'ACTIVE'}
    body = _get(cloud, '/dashboard/api/hosts').json()
    assert body['resource_classes'] == ['VCPU', 'MEMORY_MB', 'DISK_GB']
    assert sorted(h['host'] for h in body['hosts']) == [
        'host-1',
        'host-2',
        'host-3',
        'host-4',
    ]
    assert [c['name'] for c in body['cells']] == ['cell1']
    assert body['servers'] == 3
    by_host = {h['host']: h for h in body['hosts']}
    assert by_host['host-1']['aggregates'] == ['rack-a']
    assert by_host['host-2']['aggregates'] == []
    assert {h['cell'] for h in body['hosts']} == {'cell1'}
    on_hosts = {}
    for server in placed:
        host = server['OS-EXT-SRV-ATTR:host']
        on_hosts[host] = on_hosts.get(host, 0) + 1
    for host, entry in by_host.items():
        assert entry['servers'] == on_hosts.get(host, 0)
        n = entry['servers']
        res = entry['resources']
        assert (
            res['VCPU']['used'],
            res['MEMORY_MB']['used'],
            res['DISK_GB']['used'],
        ) == (2 * n, 2048 * n, 20 * n)
        for rc in body['resource_classes']:
            assert isinstance(res[rc]['capacity'], int)
            assert res[rc]['capacity'] > res[rc]['used']
    assert body['totals']['VCPU']['used'] == 6
    # Placement's usage, and its capacity before the host's reservations
    # (the compute node record does not carry [compute] reserved_host_*).
    placement = requests.Session()
    placement.headers.update(
        {
            'X-Auth-Token': 'admin:admin',
            'OpenStack-API-Version': 'placement latest',
        }
    )
    for entry in body['hosts']:
        rp = '%s/resource_providers/%s' % (cloud.placement_url, entry['uuid'])
        usages = placement.get(rp + '/usages', timeout=30).json()['usages']
        inventories = placement.get(rp + '/inventories', timeout=30).json()[
            'inventories'
        ]
        for rc in body['resource_classes']:
            inv = inventories[rc]
            assert entry['resources'][rc] == {
                'used': usages.get(rc, 0),
                'capacity': int(inv['total'] * inv['allocation_ratio']),
            }, (entry, rc, inv)
    assert body['totals']['VCPU']['capacity'] == sum(
        h['resources']['VCPU']['capacity'] for h in body['hosts']
    )
    assert body['aggregates'] == [
        {'name': 'rack-a', 'availability_zone': None, 'hosts': 1}
    ]


@pytest.mark.slow
def test_failed_builds_carry_their_fault_and_attempts(cloud):
    huge = cloud.client.create_flavor('m1.huge', 4096, 2048, 20)
    uuid = _boot(cloud, 'too-big', huge)
    assert _wait_status(cloud.client, uuid)['status'] == 'ERROR'
    ok = _boot(cloud, 'fits')
    assert _wait_status(cloud.client, ok)['status'] == 'ACTIVE'
    failed = _get(cloud, '/dashboard/api/failures').json()['failed_builds']
    assert [f['uuid'] for f in failed] == [uuid]
    entry = failed[0]
    assert entry['name'] == 'too-big' and entry['cell'] == 'cell0'
    assert entry['flavor'] == 'm1.huge'
    assert entry['fault']['message']
    assert entry['fault']['code'] >= 400
    assert entry['attempts'], entry
    for attempt in entry['attempts']:
        assert attempt['outcome'] and attempt['created']


def test_capacity_panel_answers_per_cell_and_refuses_bad_input(cloud):
    body = _get(cloud, '/dashboard/api/capacity?flavor=m1.small').json()
    (answer,) = body['capacity']
    assert answer['flavor']['name'] == 'm1.small'
    assert isinstance(answer['total'], int) and answer['total'] > 0
    assert sum(answer['per_cell'].values()) == answer['total']
    assert 'hosts' not in answer  # the panel shows no per-host list
    missing = _get(cloud, '/dashboard/api/capacity')
    assert missing.status_code == 400
    assert 'flavor' in missing.json()['badRequest']['message']
    unknown = _get(cloud, '/dashboard/api/capacity?flavor=no-such')
    assert unknown.status_code == 404
    assert 'no-such' in unknown.text


def _read_events(response, found, stop):
    name = None
    for raw in response.iter_lines(decode_unicode=True):
        if stop.is_set():
            return
        if raw.startswith('event:'):
            name = raw[6:].strip()
        elif raw.startswith('data:') and name == 'decision':
            found.append(json.loads(raw[5:]))
        elif not raw:
            name = None


@pytest.mark.slow
def test_a_boot_decision_arrives_on_the_event_stream(cloud):
    stream = _get(cloud, '/dashboard/api/events', stream=True)
    assert stream.status_code == 200
    assert stream.headers['content-type'].startswith('text/event-stream')
    found, stop = [], threading.Event()
    reader = threading.Thread(
        target=_read_events, args=(stream, found, stop), daemon=True
    )
    reader.start()
    # The hub subscribes before the response starts: a boot now is seen.
    uuid = _boot(cloud, 'streamed')
    server = _wait_status(cloud.client, uuid)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(
        i.get('instance_uuid') == uuid for d in found for i in d['instances']
    ):
        time.sleep(0.1)
    stop.set()
    reader.join(timeout=10)  # a keep-alive comes every 0.5 s
    stream.close()
    mine = [
        d
        for d in found
        if any(i.get('instance_uuid') == uuid for i in d['instances'])
    ]
    assert len(mine) == 1, found
    decision = mine[0]
    assert decision['outcome'] == 'scheduled'
    assert decision['flavor']['name'] == 'm1.small'
    assert decision['instances'][0]['host'] == server['OS-EXT-SRV-ATTR:host']
    recent = _get(cloud, '/dashboard/api/decisions').json()
    assert recent['streaming'] is True
    assert recent['decisions'][0]['request_id'] == decision['request_id']
