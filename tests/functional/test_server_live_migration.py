"""Live migration through the REST API of a whole in-process cloud (API ->
super conductor -> scheduler -> computes -> cell conductor -> placement):
with and without a host, a chosen host that does not fit, a destination
that fails its pre-check (retried elsewhere), abort and force complete;
after each, the server's host and state, the migration's status and
placement's allocations (one set at the end), and the instance action's
events under Nova's names."""

import time

import pytest

from tests.functional.test_server_actions import ADMIN
from tests.functional.test_server_actions import MEMBER
from tests.functional.test_server_resize import MoveApi

LIVE = {'block_migration': 'auto', 'host': None}


def _cloud(make_cloud, seconds=0.2, hosts=3):
    return MoveApi(
        make_cloud(
            hosts=hosts,
            overrides={
                'fake_driver': {
                    'live_migration_seconds': seconds,
                    'live_migration_step_seconds': 0.05,
                }
            },
        )
    )


@pytest.fixture
def api(make_cloud):
    return _cloud(make_cloud)


def _host(api, uuid):
    return api.show(uuid)['OS-EXT-SRV-ATTR:host']


def _live(api, uuid, body=None, version='2.68', who=ADMIN):
    return api.action(
        uuid, {'os-migrateLive': dict(LIVE, **(body or {}))}, who, version
    )


def _wait_migration(api, uuid, statuses, bound=30):
    """The live migration once its status is one of ``statuses`` (a
    bound, not a timing assertion)."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        found = api.migrations(uuid)
        if found and found[-1]['status'] in statuses:
            return found[-1]
        time.sleep(0.02)
    raise AssertionError(api.migrations(uuid))


def _settled(api, uuid, migration, host):
    """Exactly one allocation set, the instance's, on ``host``."""
    assert api.allocations(migration['uuid']) == {}
    assert api.hosts_of(uuid) == {
        host: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
    }


def test_live_migrate_without_and_with_host(api):
    uuid = api.boot()
    source = _host(api, uuid)
    # Admin only by default.
    assert _live(api, uuid, who=MEMBER).status_code == 403
    response = _live(api, uuid)
    assert response.status_code == 202, response.text
    migration = _wait_migration(api, uuid, ('completed', 'error'))
    server, _ = api.wait(uuid, 'ACTIVE')
    dest = server['OS-EXT-SRV-ATTR:host']
    assert dest != source
    assert migration['status'] == 'completed'
    assert migration['migration_type'] == 'live-migration'
    assert (migration['source_compute'], migration['dest_compute']) == (
        source,
        dest,
    )
    assert migration['memory_total'] == 512 * 1024 * 1024
    assert migration['memory_remaining'] == 0
    assert migration['disk_total'] == 1024**3  # auto: a block migration
    _settled(api, uuid, migration, dest)
    events = api.events(uuid, {'live-migration': ['compute_live_migration']})
    assert events['live-migration'] == {
        'conductor_live_migrate_instance': 'Success',
        'compute_check_can_live_migrate_destination': 'Success',
        'compute_pre_live_migration': 'Success',
        'compute_live_migration': 'Success',
        'compute_post_live_migration_at_destination': 'Success',
    }
    # To a chosen host (2.30 with force, taken as a filtered request).
    target = sorted(set(api.cloud.host_names()) - {dest})[0]
    response = _live(
        api,
        uuid,
        {'host': target, 'block_migration': False, 'force': True},
        '2.30',
    )
    assert response.status_code == 202, response.text
    second = _wait_migration(api, uuid, ('completed', 'error'))
    assert second['status'] == 'completed'
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == target
    assert second['disk_total'] == 0  # no block migration asked
    _settled(api, uuid, second, target)
    # Listed by os-migrations with its type; no longer under the server.
    listed = api.call(
        'GET',
        '/os-migrations?instance_uuid=%s' % uuid,
        who=ADMIN,
        version='2.23',
    ).json()['migrations']
    assert {m['migration_type'] for m in listed} == {'live-migration'}
    assert all('links' not in m for m in listed)
    response = api.call(
        'GET', '/servers/%s/migrations' % uuid, who=ADMIN, version='2.23'
    )
    assert response.json() == {'migrations': []}


def test_a_paused_server_stays_paused(api):
    uuid = api.boot()
    assert api.action(uuid, {'pause': None}).status_code == 202
    api.wait(uuid, 'PAUSED')
    assert _live(api, uuid).status_code == 202
    migration = _wait_migration(api, uuid, ('completed', 'error'))
    assert migration['status'] == 'completed'
    server, _ = api.wait(uuid, 'PAUSED')
    assert server['OS-EXT-STS:power_state'] == 3
    assert server['OS-EXT-SRV-ATTR:host'] == migration['dest_compute']


def test_refusals(api):
    uuid = api.boot()
    source = _host(api, uuid)
    # Schemas: disk_over_commit is required below 2.25 and refused from
    # it; "auto" only from 2.25; force only from 2.30 to 2.67.
    assert _live(api, uuid, version='2.24').status_code == 400
    assert (
        _live(
            api,
            uuid,
            {'block_migration': False, 'disk_over_commit': False},
            '2.25',
        ).status_code
        == 400
    )
    assert _live(api, uuid, {'force': False}, '2.29').status_code == 400
    assert _live(api, uuid, {'force': False}, '2.68').status_code == 400
    # Own host, unknown host: 400.
    for host in (source, 'no-such-host'):
        assert _live(api, uuid, {'host': host}).status_code == 400
    # Locked (for a non-admin it would be 409 anyway; an admin passes the
    # lock, so lock and check the state refusal instead).
    assert api.action(uuid, {'os-stop': None}).status_code == 202
    api.wait(uuid, 'SHUTOFF')
    response = _live(api, uuid)
    assert response.status_code == 409
    assert (
        'vm_state stopped' in response.json()['conflictingRequest']['message']
    )
    assert api.migrations(uuid) == []


def test_a_chosen_host_that_does_not_fit_stays_on_the_source(make_cloud):
    api = _cloud(make_cloud)
    uuid = api.boot()
    source = _host(api, uuid)
    target = sorted(set(api.cloud.host_names()) - {source})[0]
    # The target is disabled: the scheduler's filters refuse it.
    services = api.call(
        'GET', '/os-services?binary=nimbus-compute', who=ADMIN, version='2.53'
    ).json()['services']
    service = [s for s in services if s['host'] == target][0]
    response = api.call(
        'PUT',
        '/os-services/%s' % service['id'],
        {'status': 'disabled'},
        who=ADMIN,
        version='2.53',
    )
    assert response.status_code == 200, response.text
    assert _live(api, uuid, {'host': target}).status_code == 202
    migration = _wait_migration(api, uuid, ('error', 'completed'))
    assert migration['status'] == 'error'
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == source
    _settled(api, uuid, migration, source)
    events = api.events(
        uuid, {'live-migration': ['conductor_live_migrate_instance']}
    )
    assert events['live-migration'] == {
        'conductor_live_migrate_instance': 'Error'
    }
    assert 'No valid host' in (api.fault(uuid) or '')


def test_a_failed_pre_check_is_retried_on_another_host(make_cloud):
    api = _cloud(make_cloud, hosts=3)
    uuid = api.boot()
    source = _host(api, uuid)
    others = sorted(set(api.cloud.host_names()) - {source})
    left = [1]
    refused = []

    for host in others:
        driver = api.cloud.computes[host].driver

        def refuse(instance_uuid, flavor, host=host):
            if left[0] > 0:
                left[0] -= 1
                refused.append(host)
                raise RuntimeError('%s cannot take the guest' % host)

        driver.check_can_live_migrate_destination = refuse
    assert _live(api, uuid).status_code == 202
    migration = _wait_migration(api, uuid, ('completed', 'error'))
    assert migration['status'] == 'completed'
    server, _ = api.wait(uuid, 'ACTIVE')
    dest = server['OS-EXT-SRV-ATTR:host']
    assert refused and dest in others and dest != refused[0]
    _settled(api, uuid, migration, dest)


def test_no_retry_when_migrate_max_retries_is_0(make_cloud):
    api = MoveApi(
        make_cloud(
            hosts=3,
            overrides={
                'DEFAULT': {'migrate_max_retries': 0},
                'fake_driver': {'live_migration_seconds': 0.1},
            },
        )
    )
    uuid = api.boot()
    source = _host(api, uuid)
    for host in set(api.cloud.host_names()) - {source}:
        driver = api.cloud.computes[host].driver

        def refuse(instance_uuid, flavor, host=host):
            raise RuntimeError('%s cannot take the guest' % host)

        driver.check_can_live_migrate_destination = refuse
    assert _live(api, uuid).status_code == 202
    migration = _wait_migration(api, uuid, ('completed', 'error'))
    assert migration['status'] == 'error'
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == source
    _settled(api, uuid, migration, source)
    assert 'pre-check' in (api.fault(uuid) or '')


def _running(api, uuid):
    """Wait until the live migration runs and shows progress under the
    server (2.23)."""
    migration = _wait_migration(api, uuid, ('running',))
    response = api.call(
        'GET', '/servers/%s/migrations' % uuid, who=ADMIN, version='2.80'
    )
    assert response.status_code == 200, response.text
    shown = response.json()['migrations']
    assert [m['id'] for m in shown] == [migration['id']]
    assert shown[0]['memory_total_bytes'] == 512 * 1024 * 1024
    assert shown[0]['server_uuid'] == uuid
    assert {'uuid', 'user_id', 'project_id'} <= set(shown[0])
    one = api.call(
        'GET',
        '/servers/%s/migrations/%s' % (uuid, migration['id']),
        who=ADMIN,
        version='2.23',
    )
    assert one.status_code == 200, one.text
    assert 'uuid' not in one.json()['migration']
    # os-migrations links to it while it runs, without the progress.
    (listed,) = api.call(
        'GET',
        '/os-migrations?instance_uuid=%s' % uuid,
        who=ADMIN,
        version='2.23',
    ).json()['migrations']
    assert listed['links'][0]['href'].endswith(
        '/servers/%s/migrations/%s' % (uuid, migration['id'])
    )
    assert 'memory_total_bytes' not in listed
    return migration


def test_abort_mid_way(make_cloud):
    api = _cloud(make_cloud, seconds=600)
    uuid = api.boot()
    source = _host(api, uuid)
    assert _live(api, uuid).status_code == 202
    migration = _running(api, uuid)
    server = api.show(uuid)
    assert (server['status'], server['OS-EXT-STS:task_state']) == (
        'MIGRATING',
        'migrating',
    )
    # While running: the migration holds the source, the instance the
    # destination.
    assert list(api.hosts_of(migration['uuid'])) == [source]
    assert list(api.hosts_of(uuid)) == [migration['dest_compute']]
    path = '/servers/%s/migrations/%s' % (uuid, migration['id'])
    assert (
        api.call('DELETE', path, who=ADMIN, version='2.23').status_code == 404
    )
    assert (
        api.call('DELETE', path, who=MEMBER, version='2.24').status_code == 403
    )
    response = api.call('DELETE', path, who=ADMIN, version='2.24')
    assert response.status_code == 202, response.text
    done = _wait_migration(api, uuid, ('cancelled', 'error', 'completed'))
    assert done['status'] == 'cancelled'
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == source
    _settled(api, uuid, done, source)
    # Over: no longer shown, not abortable.
    assert api.call('GET', path, who=ADMIN, version='2.23').status_code == 404
    assert (
        api.call('DELETE', path, who=ADMIN, version='2.24').status_code == 409
    )
    events = api.events(
        uuid,
        {
            'live_migration_cancel': ['compute_live_migration_abort'],
            'live-migration': ['compute_live_migration'],
        },
    )
    assert events['live_migration_cancel'] == {
        'compute_live_migration_abort': 'Success'
    }
    assert events['live-migration']['compute_live_migration'] == 'Error'


def test_force_complete(make_cloud):
    api = _cloud(make_cloud, seconds=600)
    uuid = api.boot()
    assert _live(api, uuid).status_code == 202
    migration = _running(api, uuid)
    path = '/servers/%s/migrations/%s/action' % (uuid, migration['id'])
    body = {'force_complete': None}
    assert api.call('POST', path, body, ADMIN, '2.21').status_code == 404
    assert api.call('POST', path, {'x': 1}, ADMIN, '2.22').status_code == 400
    response = api.call('POST', path, body, ADMIN, '2.22')
    assert response.status_code == 202, response.text
    done = _wait_migration(api, uuid, ('completed', 'error', 'cancelled'))
    assert done['status'] == 'completed'
    assert done['memory_remaining'] == 0
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == migration['dest_compute']
    _settled(api, uuid, done, migration['dest_compute'])
    events = api.events(
        uuid,
        {
            'live_migration_force_complete': [
                'compute_live_migration_force_complete'
            ]
        },
    )
    assert events['live_migration_force_complete'] == {
        'compute_live_migration_force_complete': 'Success'
    }
    # Not migrating any more: 409.
    assert api.call('POST', path, body, ADMIN, '2.22').status_code == 409


def test_a_source_restarting_mid_way_rolls_back(make_cloud):
    api = _cloud(make_cloud, seconds=600)
    uuid = api.boot()
    source = _host(api, uuid)
    assert _live(api, uuid).status_code == 202
    migration = _running(api, uuid)
    api.cloud.kill_compute(source)  # like kill -9, mid-copy
    api.cloud.start_compute(source)
    done = _wait_migration(api, uuid, ('error', 'completed', 'cancelled'))
    assert done['status'] == 'error'
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == source
    assert done['dest_compute'] == migration['dest_compute']
    _settled(api, uuid, done, source)
    assert 'restarted' in (api.fault(uuid) or '')


def test_abort_while_preparing_needs_2_65(make_cloud):
    import threading

    api = _cloud(make_cloud, hosts=2)
    uuid = api.boot()
    source = _host(api, uuid)
    (dest,) = set(api.cloud.host_names()) - {source}
    release = threading.Event()
    calls = []

    def hold(instance_uuid, flavor):
        calls.append(instance_uuid)
        if len(calls) == 2:  # pre_live_migration: held until released
            release.wait(60)

    api.cloud.computes[dest].driver.check_can_live_migrate_destination = hold
    try:
        assert _live(api, uuid).status_code == 202
        migration = _wait_migration(api, uuid, ('preparing',))
        path = '/servers/%s/migrations/%s' % (uuid, migration['id'])
        response = api.call('DELETE', path, who=ADMIN, version='2.64')
        assert response.status_code == 400, response.text
        response = api.call('DELETE', path, who=ADMIN, version='2.65')
        assert response.status_code == 202, response.text
        # The abort is taken by the source before the copy starts.
        api.events(
            uuid, {'live_migration_cancel': ['compute_live_migration_abort']}
        )
    finally:
        release.set()
    done = _wait_migration(api, uuid, ('cancelled', 'error', 'completed'))
    assert done['status'] == 'cancelled'
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == source
    _settled(api, uuid, done, source)
