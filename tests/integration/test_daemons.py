"""The daemons as separate processes on RabbitMQ and MariaDB/PostgreSQL.

API, placement API, scheduler, super conductor, a cell conductor and three
computes, each its own process with its own config file. One host fails
every build; another is killed with SIGKILL while it builds and started
again. Every server must end ACTIVE or ERROR with a fault, and placement
must hold exactly the allocations of the ACTIVE servers.
"""

import time

import pytest
import requests

from nimbus.allinone.client import ComputeClient
from nimbus.testing import daemons

pytestmark = pytest.mark.integration


def _cloud(tmp_path, fresh, kind, compute_options=None):
    databases = {name: fresh.database(kind)
                 for name in ('api', 'cell0', 'cell1', 'placement')}
    cloud = daemons.DaemonCloud(
        str(tmp_path / 'cloud'), fresh.vhost(), fresh.vhost(), databases,
        hosts=3, compute_options=compute_options,
        common_options={'compute': {'update_resources_interval': 2}})
    cloud.prepare()
    return cloud


def _wait(predicate, timeout, what, cloud):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        cloud._check_alive()
        time.sleep(0.5)
    raise AssertionError('timed out waiting for %s\n%s'
                         % (what, cloud.logs()))


def _placement(cloud, path):
    response = requests.get(cloud.placement_url + path, headers={
        'X-Auth-Token': 'admin', 'OpenStack-API-Version':
        'placement latest'}, timeout=30)
    response.raise_for_status()
    return response.json()


def _consumers_in_placement(cloud):
    consumers = {}
    for rp in _placement(cloud, '/resource_providers')['resource_providers']:
        allocations = _placement(
            cloud, '/resource_providers/%s/allocations' % rp['uuid'])
        for consumer, alloc in allocations['allocations'].items():
            consumers.setdefault(consumer, {})[rp['uuid']] = alloc[
                'resources']
    return consumers


def _ready(cloud):
    api = ComputeClient(cloud.api_url)
    _wait(lambda: len([h for h in
                       api.get('/os-hypervisors/detail')['hypervisors']
                       if h.get('state') == 'up']) == 3,
          60, 'three computes to report', cloud)
    cloud.manage('cell', 'discover-hosts')
    return api


def test_thirty_servers_with_a_failing_host_and_a_killed_compute(
        tmp_path, fresh):
    cloud = _cloud(tmp_path, fresh, 'mysql', compute_options={
        'host-1': {'fake_driver': {'fail_builds': 'true'}},
        'host-2': {'fake_driver': {'spawn_seconds': 1.0}},
        'host-3': {'fake_driver': {'spawn_seconds': 0.2}},
    })
    try:
        cloud.start()
        api = _ready(cloud)
        flavor = api.create_flavor('m1.tiny', 1, 512, 1)
        image = api.create_image('cirros')
        ids = [api.create_server('vm-%02d' % i, flavor['id'],
                                 image['id'])['server']['id']
               for i in range(30)]

        def building_on_host2():
            return [s for s in api.servers() if s['status'] == 'BUILD' and
                    s.get('OS-EXT-SRV-ATTR:host') == 'host-2']
        _wait(building_on_host2, 90, 'a build on host-2', cloud)
        cloud.daemons['host-2'].kill9()
        time.sleep(1)
        cloud.start_compute('host-2')

        def settled():
            servers = {s['id']: s for s in api.servers()}
            if set(ids) <= set(servers) and not any(
                    servers[i]['status'] == 'BUILD' for i in ids):
                return servers
            return None
        servers = _wait(settled, 240, 'every server to leave BUILD', cloud)

        active = {i for i in ids if servers[i]['status'] == 'ACTIVE'}
        errored = {i for i in ids if servers[i]['status'] == 'ERROR'}
        assert active | errored == set(ids), cloud.logs()
        assert active, 'no server became ACTIVE\n' + cloud.logs()
        for server_id in errored:
            fault = api.server(server_id).get('fault')
            assert fault and fault.get('message'), server_id
        for server_id in active:
            assert servers[server_id]['OS-EXT-SRV-ATTR:host'] != 'host-1'
        consumers = _consumers_in_placement(cloud)
        assert set(consumers) == active, (
            'leaked: %s missing: %s' % (set(consumers) - active,
                                        active - set(consumers)))
        for server_id in active:
            (resources,) = consumers[server_id].values()
            assert resources == {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
    finally:
        cloud.stop()


def test_request_id_is_in_every_service_log_on_postgresql(tmp_path, fresh):
    cloud = _cloud(tmp_path, fresh, 'postgresql')
    try:
        cloud.start()
        api = _ready(cloud)
        flavor = api.create_flavor('m1.tiny', 1, 512, 1)
        image = api.create_image('cirros')
        response = api.session.post(api.url + '/servers', json={'server': {
            'name': 'traced', 'flavorRef': flavor['id'],
            'imageRef': image['id'], 'networks': 'none'}})
        assert response.status_code == 202, response.text
        request_id = response.headers['x-openstack-request-id']
        server_id = response.json()['server']['id']
        server = _wait(lambda: (lambda s: s if s['status'] != 'BUILD'
                                else None)(api.server(server_id)),
                       90, 'the traced server', cloud)
        assert server['status'] == 'ACTIVE', cloud.logs()
        host = server['OS-EXT-SRV-ATTR:host']
        for name in ('api', 'conductor', 'scheduler', host):
            with open(cloud.daemons[name].log_file) as f:
                lines = [line for line in f if request_id in line]
            assert lines, '%s never logged %s\n%s' % (
                name, request_id, cloud.daemons[name].tail())
    finally:
        cloud.stop()
