"""Issue 10 section 3: late checks and build failures on the compute, with
the real services in one process.

- Three schedulers race 100 requests in anti-affinity groups over 20 hosts:
  the compute's late group check keeps every group spread.
- Builds failing on a host count for it; past ``[compute]
  consecutive_build_service_disable_threshold`` the service is disabled
  with its reason in ``GET /os-services``.
- A build whose compute dies mid-spawn goes to its remaining alternate.
"""

import collections
from concurrent import futures

import pytest
import sqlalchemy as sa

from nimbus.allinone.cloud import wait_for
from nimbus.common import db as common_db
from nimbus.db.cell import models as cell_models
from nimbus import services
from tests.functional.scheduler import fixtures as fx

HOSTS = 20
GROUPS = 10
MEMBERS = 10  # 100 requests


def _attempts(cloud):
    db = common_db.get_database(cloud.db_urls['cell1'])
    try:
        with db.session() as session:
            return [
                (r.instance_uuid, r.host, r.result)
                for r in session.execute(
                    sa.select(cell_models.BuildAttempt)
                ).scalars()
            ]
    finally:
        db.dispose()


@pytest.mark.slow
def test_racing_anti_affinity_requests_never_share_a_host(make_cloud):
    cloud = make_cloud(
        hosts=HOSTS,
        overrides={
            # Builds stay in flight a little, so the race is real.
            'fake_driver': {'spawn_seconds': 0.2},
            'scheduler': {'max_attempts': 5},
        },
    )
    # Two more schedulers on the same topic: requests go round-robin.
    for name in ('sched-2', 'sched-3'):
        cloud._start(services.scheduler_service(cloud.conf, host=name))
    api = fx.admin_client(cloud)
    flavor = api.create_flavor('f', 1, 256, 1)
    image = api.create_image('img')
    groups = [
        fx.create_group(api, 'g%d' % n, 'anti-affinity') for n in range(GROUPS)
    ]
    wait_for(
        lambda: len(fx.provider_usages(cloud)) == HOSTS,
        timeout=60,
        what='every compute in placement',
    )

    def boot(index):
        group = groups[index % GROUPS]
        return group['id'], fx.boot(
            api, 'm%d' % index, flavor, image, hints={'group': group['id']}
        )

    with futures.ThreadPoolExecutor(max_workers=20) as pool:
        booted = list(pool.map(boot, range(GROUPS * MEMBERS)))
    servers = fx.settle(api, [s for _g, s in booted], timeout=240)

    hosts_by_group = collections.defaultdict(list)
    for group_id, server_id in booted:
        server = servers[server_id]
        if server['status'] == 'ACTIVE':
            hosts_by_group[group_id].append(fx.host_of(server))
            assert fx.consumer_allocations(cloud, server_id)
        else:
            # Out of alternates: never left building, never holding room.
            assert server['status'] == 'ERROR'
            assert fx.consumer_allocations(cloud, server_id) == {}
    violations = {
        g: h for g, h in hosts_by_group.items() if len(h) != len(set(h))
    }
    assert violations == {}
    active = sum(len(h) for h in hosts_by_group.values())
    assert active >= GROUPS * MEMBERS * 9 // 10
    # A refusal by the late check is recorded as such, never as a failure
    # of the host.
    results = {result for _u, _h, result in _attempts(cloud)}
    assert 'failed' not in results
    for host in cloud.host_names():
        assert _failed_builds(cloud, host) == 0


def _failed_builds(cloud, host):
    db = common_db.get_database(cloud.db_urls['cell1'])
    try:
        with db.session() as session:
            return session.execute(
                sa.select(cell_models.ComputeNode.failed_builds).where(
                    cell_models.ComputeNode.host == host
                )
            ).scalar()
    finally:
        db.dispose()


def _service(api, host):
    for svc in api.get('/os-services')['services']:
        if svc['host'] == host and svc['binary'] == 'nova-compute':
            return svc
    raise AssertionError('no service for %s' % host)


@pytest.mark.slow
def test_consecutive_build_failures_disable_the_compute(make_cloud):
    cloud = make_cloud(
        hosts=1,
        fail_hosts={'host-1'},
        overrides={
            'compute': {'consecutive_build_service_disable_threshold': 3}
        },
    )
    api = fx.admin_client(cloud)
    flavor = api.create_flavor('f', 1, 256, 1)
    image = api.create_image('img')
    for n in range(2):
        server = fx.boot_and_settle(api, 'bad%d' % n, flavor, image)
        assert server['status'] == 'ERROR'
        # Each failure reaches the compute node record (BuildFailureWeigher)
        # at once, not at the next periodic report.
        assert _failed_builds(cloud, 'host-1') == n + 1
        assert _service(api, 'host-1')['status'] == 'enabled'
    fx.boot_and_settle(api, 'bad2', flavor, image)
    assert _failed_builds(cloud, 'host-1') == 3
    svc = _service(api, 'host-1')
    assert svc['status'] == 'disabled'
    assert svc['disabled_reason'] == (
        'Auto-disabled due to 3 consecutive build failures'
    )


@pytest.mark.slow
def test_a_success_resets_the_failure_count(make_cloud):
    cloud = make_cloud(
        hosts=1,
        fail_hosts={'host-1'},
        overrides={
            'compute': {'consecutive_build_service_disable_threshold': 3}
        },
    )
    api = fx.admin_client(cloud)
    flavor = api.create_flavor('f', 1, 256, 1)
    image = api.create_image('img')
    for n in range(2):
        fx.boot_and_settle(api, 'bad%d' % n, flavor, image)
    assert _failed_builds(cloud, 'host-1') == 2
    # The hypervisor recovers: one success, and the count starts again.
    cloud.computes['host-1'].driver.opts.fail_builds = False
    assert fx.boot_and_settle(api, 'good', flavor, image)['status'] == 'ACTIVE'
    # Reset right after the instance went ACTIVE.
    wait_for(
        lambda: _failed_builds(cloud, 'host-1') == 0,
        timeout=30,
        what='the failure count to reset',
    )
    cloud.computes['host-1'].driver.opts.fail_builds = True
    for n in range(2):
        fx.boot_and_settle(api, 'again%d' % n, flavor, image)
    assert _failed_builds(cloud, 'host-1') == 2
    assert _service(api, 'host-1')['status'] == 'enabled'


def _cell_instance(cloud, server_id):
    db = common_db.get_database(cloud.db_urls['cell1'])
    try:
        with db.session() as session:
            row = session.execute(
                sa.select(cell_models.Instance).where(
                    cell_models.Instance.uuid == server_id
                )
            ).scalar()
            return (
                None
                if row is None
                else (row.vm_state, row.task_state, row.host)
            )
    finally:
        db.dispose()


@pytest.mark.slow
def test_a_build_whose_compute_dies_goes_to_its_alternate(make_cloud):
    # host-1 is preferred (more free RAM) and spawns forever; host-2 is
    # the alternate and spawns at once.
    cloud = make_cloud(
        hosts=2,
        host_overrides={
            'host-1': {
                'fake_driver': {'spawn_seconds': 120, 'memory_mb': 262144}
            }
        },
        overrides={
            'DEFAULT': {'service_down_time': 4},
            'conductor': {'build_check_interval': 1},
        },
    )
    api = fx.admin_client(cloud)
    flavor = api.create_flavor('f', 1, 256, 1)
    image = api.create_image('img')
    server_id = fx.boot(api, 'survivor', flavor, image)
    wait_for(
        lambda: (
            _cell_instance(cloud, server_id)
            == ('building', 'spawning', 'host-1')
        ),
        timeout=60,
        what='the spawn to start on host-1',
    )
    cloud.kill_compute('host-1')  # mid-spawn, like kill -9
    server = fx.settle(api, [server_id], timeout=90)[server_id]
    assert server['status'] == 'ACTIVE'
    assert fx.host_of(server) == 'host-2'
    allocations = fx.consumer_allocations(cloud, server_id)
    assert len(allocations) == 1  # host-1's claim was freed
    # The success is recorded just after the instance went ACTIVE.
    wait_for(
        lambda: (
            [(h, r) for u, h, r in _attempts(cloud) if u == server_id]
            == [('host-1', 'failed'), ('host-2', 'success')]
        ),
        timeout=30,
        what='both attempts recorded',
    )
