"""The first end-to-end path: POST /servers to ACTIVE, and every way a
build can fail, through the real services in one process."""

import logging
import uuid

import pytest
import sqlalchemy as sa

from nimbus.allinone import client as client_mod
from nimbus.allinone.cloud import wait_for
from nimbus.common import context
from nimbus.common import db as common_db
from nimbus.common import rpc
from nimbus.compute import resource_tracker
from nimbus.compute.virt import fake
from nimbus.conductor import rpcapi as conductor_rpcapi
from nimbus.db.cell import models as cell_models
from nimbus import services


def _settled(api, uuids, timeout=60):
    def done():
        servers = {s['id']: s for s in api.servers()}
        if all(
            u in servers and servers[u]['status'] in ('ACTIVE', 'ERROR')
            for u in uuids
        ):
            return servers
        return None

    return wait_for(done, timeout=timeout, what='servers to settle')


def _allocations(cloud, consumer):
    client = services.placement(cloud.conf)
    return client.get_allocations_for_consumer(
        context.get_admin_context(), consumer
    )['allocations']


def _boot(api, name, **kwargs):
    return api.create_server(
        name, api.flavor['id'], api.image['id'], **kwargs
    )['server']['id']


@pytest.mark.slow
def test_boot_to_active_with_host_and_allocation(admin):
    server_id = _boot(admin, 'vm-1')
    servers = _settled(admin, [server_id])
    server = servers[server_id]
    assert server['status'] == 'ACTIVE'
    host = server['OS-EXT-SRV-ATTR:host']
    assert host in admin.cloud.host_names()
    allocations = _allocations(admin.cloud, server_id)
    assert len(allocations) == 1
    (resources,) = [a['resources'] for a in allocations.values()]
    assert resources == {'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 20}


@pytest.mark.slow
def test_multi_create_spreads_and_all_become_active(admin):
    admin.create_server(
        'multi',
        admin.flavor['id'],
        admin.image['id'],
        min_count=6,
        max_count=6,
    )
    servers = wait_for(
        lambda: (
            [
                s
                for s in admin.servers()
                if s['name'].startswith('multi') and s['status'] == 'ACTIVE'
            ]
            or None
            if len([s for s in admin.servers() if s['status'] == 'ACTIVE'])
            >= 6
            else None
        ),
        timeout=60,
        what='six active servers',
    )
    hosts = {s['OS-EXT-SRV-ATTR:host'] for s in servers}
    # The RAM/CPU/disk weighers spread equal hosts: 6 servers, 4 hosts.
    assert len(hosts) == 4


@pytest.mark.slow
def test_failed_build_reschedules_to_an_alternate(make_cloud):
    cloud = make_cloud(hosts=3, fail_hosts={'host-1', 'host-2'})
    api = client_mod.ComputeClient(cloud.api_url)
    api.flavor = api.create_flavor('f', 1, 512, 1)
    api.image = api.create_image('img')
    ids = [_boot(api, 'r%d' % i) for i in range(3)]
    servers = _settled(api, ids)
    for server_id in ids:
        assert servers[server_id]['status'] == 'ACTIVE'
        assert servers[server_id]['OS-EXT-SRV-ATTR:host'] == 'host-3'
        allocations = _allocations(cloud, server_id)
        assert len(allocations) == 1  # the failed hosts' claims were freed


@pytest.mark.slow
def test_every_host_failing_ends_in_error_with_every_attempt(make_cloud):
    cloud = make_cloud(hosts=3, fail_hosts={'host-1', 'host-2', 'host-3'})
    api = client_mod.ComputeClient(cloud.api_url)
    api.flavor = api.create_flavor('f', 1, 512, 1)
    api.image = api.create_image('img')
    server_id = _boot(api, 'doomed')
    server = _settled(api, [server_id])[server_id]
    assert server['status'] == 'ERROR'
    fault = api.server(server_id)['fault']
    assert 'Exhausted all hosts' in fault['message']
    for host in ('host-1', 'host-2', 'host-3'):
        assert host in fault['details']
    assert 'simulated hypervisor failure' in fault['details']
    assert _allocations(cloud, server_id) == {}


def test_no_valid_host_is_buried_in_cell0_with_a_reason(admin):
    huge = admin.create_flavor('huge', 4096, 10**7, 10)
    server_id = admin.create_server('too-big', huge['id'], admin.image['id'])[
        'server'
    ]['id']
    server = _settled(admin, [server_id])[server_id]
    assert server['status'] == 'ERROR'
    fault = admin.server(server_id)['fault']
    assert 'No valid host' in fault['message']
    assert fault['details']
    cell0 = admin.cloud.db_urls['cell0']
    with common_db.get_database(cell0).session() as session:
        row = session.execute(
            sa.select(cell_models.Instance).where(
                cell_models.Instance.uuid == server_id
            )
        ).scalar()
    assert row is not None and row.vm_state == 'error'


def test_no_valid_host_is_one_info_line_without_traceback(admin, caplog):
    caplog.set_level(logging.INFO)
    # an earlier test in this worker may have run a CLI in process, whose
    # oslo.log setup quiets the `nimbus` logger to WARNING
    caplog.set_level(logging.INFO, logger='nimbus')
    huge = admin.create_flavor('huger', 4096, 10**7, 10)
    server_id = admin.create_server(
        'too-big-2', huge['id'], admin.image['id']
    )['server']['id']
    assert _settled(admin, [server_id])[server_id]['status'] == 'ERROR'
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []
    lines = [
        r
        for r in caplog.records
        if 'No valid host' in r.getMessage() and r.levelno >= logging.INFO
    ]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert lines[0].levelno == logging.INFO and not lines[0].exc_info
    assert 'placement returned 0 hosts' in lines[0].getMessage()


@pytest.mark.slow
def test_delete_frees_the_allocation(admin):
    server_id = _boot(admin, 'short-lived')
    assert _settled(admin, [server_id])[server_id]['status'] == 'ACTIVE'
    assert _allocations(admin.cloud, server_id)
    admin.delete('/servers/%s' % server_id)
    wait_for(
        lambda: not _allocations(admin.cloud, server_id),
        timeout=30,
        what='allocation to be freed',
    )
    wait_for(
        lambda: server_id not in {s['id'] for s in admin.servers()},
        timeout=30,
        what='server to disappear',
    )


def _force_down(api, host, down=True):
    (service,) = [
        s
        for s in api.get('/os-services')['services']
        if s['host'] == host and s['binary'] == 'nova-compute'
    ]
    api._call(
        'PUT',
        api.url + '/os-services/%s' % service['id'],
        json={'forced_down': down},
    )


@pytest.mark.slow
def test_delete_with_its_compute_down_frees_at_once_guest_goes_later(
    make_cloud,
):
    cloud = make_cloud(hosts=1)
    api = client_mod.ComputeClient(cloud.api_url)
    api.flavor = api.create_flavor('f', 1, 512, 1)
    api.image = api.create_image('img')
    server_id = _boot(api, 'stranded')
    assert _settled(api, [server_id])[server_id]['status'] == 'ACTIVE'
    assert server_id in cloud.computes['host-1'].driver.list_instances()
    cloud.stop_compute('host-1')
    _force_down(api, 'host-1')
    api.delete('/servers/%s' % server_id)
    # No waiting: the API deleted it locally.
    assert _allocations(cloud, server_id) == {}
    assert server_id not in {s['id'] for s in api.servers()}
    # The guest is still on the stopped host until its compute returns.
    assert (
        server_id
        in fake.FakeDriver(
            cloud.compute_conf('host-1'), 'host-1'
        ).list_instances()
    )
    compute = cloud.start_compute('host-1')
    assert server_id not in compute.driver.list_instances()
    _force_down(api, 'host-1', False)
    # The host is whole again: a new server lands on it.
    again = _boot(api, 'after')
    assert _settled(api, [again])[again]['status'] == 'ACTIVE'


@pytest.mark.slow
def test_malformed_rpc_messages_do_not_stop_the_services(admin):
    cloud = admin.cloud
    ctxt = context.get_admin_context()
    transport = rpc.get_transport(cloud.conf, cloud.cell_transport_url)
    cell = conductor_rpcapi.CellConductorAPI(transport, cloud.conf)
    raw = rpc.get_client(transport, 'conductor', '1.0', conf=cloud.conf)
    # A call with missing and unknown arguments is answered with an error.
    for kwargs in ({}, {'host': 'x', 'bogus': 1}):
        try:
            raw.call(ctxt, 'instances_on_host', **kwargs)
        except Exception as exc:
            assert 'InvalidMessage' in type(
                exc
            ).__name__ or 'instances_on_host' in str(exc)
        else:
            raise AssertionError('malformed call was accepted')
    # Casts with garbage are dropped, and unknown methods are refused.
    raw.cast(ctxt, 'build_instances', instance_uuid=str(uuid.uuid4()))
    compute = rpc.get_client(
        transport, 'compute', '1.0', server='host-1', conf=cloud.conf
    )
    compute.cast(ctxt, 'build_and_run_instance', instance='garbage')
    compute.cast(
        ctxt, 'external_instance_event', instance_uuid='x', events='not-a-list'
    )
    # ...and everything still works.
    assert cell.instances_on_host(ctxt, 'host-1') == []
    server_id = _boot(admin, 'after-garbage')
    assert _settled(admin, [server_id])[server_id]['status'] == 'ACTIVE'


def _cell_instance(cloud, server_id):
    with common_db.get_database(cloud.db_urls['cell1']).session() as s:
        row = s.execute(
            sa.select(cell_models.Instance).where(
                cell_models.Instance.uuid == server_id
            )
        ).scalar()
        return (
            None if row is None else (row.vm_state, row.task_state, row.host)
        )


def _slow_cloud(make_cloud, spawn_seconds, **conductor):
    cloud = make_cloud(
        hosts=1,
        host_overrides={
            'host-1': {'fake_driver': {'spawn_seconds': spawn_seconds}}
        },
        overrides={
            'DEFAULT': {'service_down_time': 4},
            'conductor': dict({'build_check_interval': 1}, **conductor),
        },
    )
    api = client_mod.ComputeClient(cloud.api_url)
    api.flavor = api.create_flavor('f', 1, 512, 1)
    api.image = api.create_image('img')
    return cloud, api


@pytest.mark.slow
def test_a_build_whose_compute_dies_ends_in_error_and_frees_its_claim(
    make_cloud,
):
    cloud, api = _slow_cloud(make_cloud, spawn_seconds=120)
    server_id = _boot(api, 'orphaned')
    wait_for(
        lambda: (
            _cell_instance(cloud, server_id)
            == ('building', 'spawning', 'host-1')
        ),
        timeout=60,
        what='the spawn to start',
    )
    assert _allocations(cloud, server_id)
    cloud.kill_compute('host-1')  # mid-spawn, like kill -9
    server = _settled(api, [server_id])[server_id]
    assert server['status'] == 'ERROR'
    assert server['OS-EXT-SRV-ATTR:host'] is None
    fault = api.server(server_id)['fault']
    assert fault['message'] == 'Build interrupted: compute host-1 is down'
    assert fault['details'].startswith(
        'Build interrupted: nimbus-compute on host-1 down since '
    )
    assert _allocations(cloud, server_id) == {}
    # The compute comes back: its recovery finds nothing of it to settle,
    # and the fault stays the build check's.
    cloud.start_compute('host-1')
    assert api.server(server_id)['status'] == 'ERROR'
    assert api.server(server_id)['fault'] == fault
    assert _allocations(cloud, server_id) == {}


@pytest.mark.slow
def test_a_build_past_the_timeout_is_failed_and_the_late_guest_destroyed(
    make_cloud,
):
    cloud, api = _slow_cloud(
        make_cloud, spawn_seconds=6, instance_build_timeout=2
    )
    server_id = _boot(api, 'slow')
    server = _settled(api, [server_id])[server_id]
    assert server['status'] == 'ERROR'
    assert api.server(server_id)['fault']['message'] == 'Build timed out'
    assert _allocations(cloud, server_id) == {}
    # A clean stop lets the spawn finish: its move to ACTIVE loses the
    # compare-and-swap, and the compute destroys the guest it made.
    cloud.stop_compute('host-1')
    assert _cell_instance(cloud, server_id) == ('error', None, None)
    assert (
        server_id
        not in fake.FakeDriver(
            cloud.compute_conf('host-1'), 'host-1'
        ).list_instances()
    )
    assert _allocations(cloud, server_id) == {}


def _inventory(cloud, host):
    client = services.placement(cloud.conf)
    node = resource_tracker.compute_node_uuid(host)
    (root,) = [
        p
        for p in client.get_provider_tree(context.get_admin_context(), node)
        if p['uuid'] == node
    ]
    return node, root['inventories']


def _node_ratio(cloud, host):
    with common_db.get_database(cloud.db_urls['cell1']).session() as s:
        return (
            s.execute(
                sa.select(cell_models.ComputeNode).where(
                    cell_models.ComputeNode.host == host
                )
            )
            .scalar()
            .cpu_allocation_ratio
        )


def _operator_sets_vcpu_ratio(cloud, node, ratio):
    client = services.placement(cloud.conf)
    ctxt = context.get_admin_context()
    inventories = _inventory(cloud, 'host-1')[1]
    inventories['VCPU']['allocation_ratio'] = ratio
    client.set_inventory(ctxt, node, inventories)


def test_configured_allocation_ratios_reach_placement_and_are_forced(
    make_cloud,
):
    cloud = make_cloud(
        hosts=1,
        overrides={
            'compute': {
                'cpu_allocation_ratio': 8.0,
                'ram_allocation_ratio': 1.5,
            }
        },
    )
    node, inventory = _inventory(cloud, 'host-1')
    assert inventory['VCPU']['allocation_ratio'] == 8.0
    assert inventory['MEMORY_MB']['allocation_ratio'] == 1.5
    assert inventory['DISK_GB']['allocation_ratio'] == 1.0  # initial_*
    # A configured ratio wins over an operator's change at the next update
    # that reads the tree ([compute] provider_tree_refresh_interval).
    _operator_sets_vcpu_ratio(cloud, node, 2.0)
    cloud.computes['host-1'].tracker.forget()  # the interval passed
    cloud.computes['host-1']._update_resources()
    assert _inventory(cloud, 'host-1')[1]['VCPU']['allocation_ratio'] == 8.0
    assert _node_ratio(cloud, 'host-1') == 8.0


def test_an_operators_ratio_survives_updates_when_config_leaves_it_unset(
    make_cloud,
):
    cloud = make_cloud(hosts=1)
    node, inventory = _inventory(cloud, 'host-1')
    assert inventory['VCPU']['allocation_ratio'] == 4.0  # initial_*
    _operator_sets_vcpu_ratio(cloud, node, 2.5)
    cloud.computes['host-1'].tracker.forget()  # the refresh interval passed
    cloud.computes['host-1']._update_resources()
    assert _inventory(cloud, 'host-1')[1]['VCPU']['allocation_ratio'] == 2.5
    assert _node_ratio(cloud, 'host-1') == 2.5
    # ...and a restart of the compute.
    cloud.stop_compute('host-1')
    cloud.start_compute('host-1')
    assert _inventory(cloud, 'host-1')[1]['VCPU']['allocation_ratio'] == 2.5


def test_stopping_the_cloud_closes_its_transports(make_cloud):
    cloud = make_cloud(hosts=2)
    confs = list(cloud.confs)
    assert rpc.transports_of(cloud.conf)  # API bus, cell buses
    assert rpc.transports_of(cloud.computes['host-1'].conf)
    cloud.stop()
    assert all(rpc.transports_of(conf) == {} for conf in confs)


@pytest.mark.slow
def test_a_server_without_a_zone_takes_its_hosts_zone(admin):
    host_1 = admin.cloud.host_names()[0]
    agg = admin.post(
        '/os-aggregates',
        {'aggregate': {'name': 'zoned', 'availability_zone': 'zone-a'}},
    )['aggregate']
    admin.post(
        '/os-aggregates/%s/action' % agg['id'], {'add_host': {'host': host_1}}
    )
    ids = [_boot(admin, 'zoneless-%d' % i) for i in range(3)]
    servers = _settled(admin, ids)
    for server_id in ids:
        server = servers[server_id]
        assert server['status'] == 'ACTIVE'
        host = server['OS-EXT-SRV-ATTR:host']
        assert server['OS-EXT-AZ:availability_zone'] == (
            'zone-a' if host == host_1 else 'nova'
        ), (host, server)
    # A zone asked for is kept as asked.
    server_id = _boot(admin, 'zoned', availability_zone='zone-a')
    server = _settled(admin, [server_id])[server_id]
    assert server['OS-EXT-SRV-ATTR:host'] == host_1
    assert server['OS-EXT-AZ:availability_zone'] == 'zone-a'


@pytest.mark.slow
def test_a_rescheduled_server_takes_its_new_hosts_zone(make_cloud):
    cloud = make_cloud(hosts=3, fail_hosts={'host-1', 'host-2'})
    api = client_mod.ComputeClient(cloud.api_url)
    agg = api.post(
        '/os-aggregates',
        {'aggregate': {'name': 'good', 'availability_zone': 'zone-good'}},
    )['aggregate']
    api.post(
        '/os-aggregates/%s/action' % agg['id'],
        {'add_host': {'host': 'host-3'}},
    )
    api.flavor = api.create_flavor('f', 1, 512, 1)
    api.image = api.create_image('img')
    ids = [_boot(api, 'r%d' % i) for i in range(3)]
    servers = _settled(api, ids)
    for server_id in ids:
        assert servers[server_id]['OS-EXT-SRV-ATTR:host'] == 'host-3'
        assert servers[server_id]['OS-EXT-AZ:availability_zone'] == 'zone-good'
