"""Resize and cold migrate through the REST API of a whole in-process
cloud (API -> super conductor -> scheduler -> computes -> cell
conductor -> placement): the states at the end, the migration record's
status, placement's allocations of the instance and the migration, and
Nova's refusals."""

import pytest

from nimbus import services
from nimbus.common import context
from nimbus.db import cell_migrations
from tests.functional.test_server_actions import ADMIN
from tests.functional.test_server_actions import Api
from tests.functional.test_server_actions import MEMBER


class MoveApi(Api):
    def __init__(self, cloud):
        super().__init__(cloud)
        self.big = self.admin.create_flavor('m1.big', 2, 1024, 1)
        self.small_disk = self.admin.create_flavor('m1.nodisk', 1, 512, 0)

    def allocations(self, consumer):
        response = services.placement(self.cloud.conf).request(
            context.get_admin_context(), 'GET', '/allocations/%s' % consumer
        )
        assert response.status_code == 200, response.text
        return response.json()['allocations']

    def hosts_of(self, consumer):
        """{host name: resources} of a consumer's allocations."""
        names = {}
        for rp, alloc in self.allocations(consumer).items():
            response = services.placement(self.cloud.conf).request(
                context.get_admin_context(),
                'GET',
                '/resource_providers/%s' % rp,
            )
            names[response.json()['name']] = alloc['resources']
        return names

    def migrations(self, uuid):
        from nimbus.common import db

        database = db.get_database(self.cloud.db_urls['cell1'])
        with database.session() as session:
            return cell_migrations.for_instance(session, uuid)

    def fault(self, uuid):
        import sqlalchemy as sa

        from nimbus.common import db
        from nimbus.db.cell import models

        database = db.get_database(self.cloud.db_urls['cell1'])
        with database.session() as session:
            return (
                session.execute(
                    sa.select(models.InstanceFault.message)
                    .where(models.InstanceFault.instance_uuid == uuid)
                    .order_by(models.InstanceFault.id.desc())
                )
                .scalars()
                .first()
            )

    def migration(self, uuid):
        found = self.migrations(uuid)
        assert len(found) == 1, found
        return found[0]

    def events(self, uuid, done=None):
        """{action: {event: result}}; ``done`` ({action: [events]}): wait
        (a bound, not a timing assertion) until those events are
        finished (an event's finish is recorded just after its step)."""
        import time

        deadline = time.monotonic() + 30
        while True:
            out = self._events(uuid)
            if not done or all(
                out.get(a, {}).get(e) for a, es in done.items() for e in es
            ):
                return out
            if time.monotonic() > deadline:
                raise AssertionError(out)
            time.sleep(0.05)

    def _events(self, uuid):
        actions = self.call(
            'GET', '/servers/%s/os-instance-actions' % uuid, who=ADMIN
        ).json()['instanceActions']
        out = {}
        for action in actions:
            detail = self.call(
                'GET',
                '/servers/%s/os-instance-actions/%s'
                % (uuid, action['request_id']),
                who=ADMIN,
                version='2.51',
            ).json()['instanceAction']
            out[action['action']] = {
                e['event']: e['result'] for e in detail.get('events', [])
            }
        return out


@pytest.fixture
def api(make_cloud):
    return MoveApi(make_cloud(hosts=3))


def _host(api, uuid):
    return api.show(uuid)['OS-EXT-SRV-ATTR:host']


def _resize(api, uuid, flavor=None, who=MEMBER):
    return api.action(
        uuid, {'resize': {'flavorRef': (flavor or api.big)['id']}}, who
    )


def _verify(api, uuid):
    server, seen = api.wait(uuid, 'VERIFY_RESIZE')
    assert server['OS-EXT-STS:vm_state'] == 'resized'
    return server


def test_resize_then_confirm(api):
    uuid = api.boot()
    source = _host(api, uuid)
    response = _resize(api, uuid)
    assert response.status_code == 202, response.text
    server = _verify(api, uuid)
    dest = server['OS-EXT-SRV-ATTR:host']
    assert dest != source  # allow_resize_to_same_host is False
    assert server['flavor']['vcpus'] == 2
    migration = api.migration(uuid)
    assert migration['migration_type'] == 'resize'
    assert migration['status'] == 'finished'
    assert (migration['source_compute'], migration['dest_compute']) == (
        source,
        dest,
    )
    # While VERIFY_RESIZE: the instance holds the destination (the new
    # flavor), the migration the source (the old).
    assert api.hosts_of(uuid) == {
        dest: {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 1}
    }
    assert api.hosts_of(migration['uuid']) == {
        source: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
    }
    response = api.action(uuid, {'confirmResize': None})
    assert response.status_code == 204, response.text
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == dest
    _wait_status(api, uuid, 'confirmed')
    assert api.allocations(api.migration(uuid)['uuid']) == {}
    assert list(api.hosts_of(uuid)) == [dest]
    events = api.events(
        uuid,
        {
            'resize': ['compute_finish_resize'],
            'confirmResize': ['compute_confirm_resize'],
        },
    )
    assert events['resize'] == {
        'conductor_migrate_server': 'Success',
        'compute_prep_resize': 'Success',
        'compute_resize_instance': 'Success',
        'compute_finish_resize': 'Success',
    }
    assert events['confirmResize'] == {'compute_confirm_resize': 'Success'}


def _wait_status(api, uuid, status):
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = api.migrations(uuid)
        if found and found[0]['status'] == status:
            return
        time.sleep(0.05)
    raise AssertionError(api.migration(uuid))


def test_resize_then_revert(api):
    uuid = api.boot()
    source = _host(api, uuid)
    assert _resize(api, uuid).status_code == 202
    _verify(api, uuid)
    migration = api.migration(uuid)
    response = api.action(uuid, {'revertResize': None})
    assert response.status_code == 202, response.text
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == source
    assert server['flavor']['vcpus'] == 1
    _wait_status(api, uuid, 'reverted')
    assert api.allocations(migration['uuid']) == {}
    assert api.hosts_of(uuid) == {
        source: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
    }


def test_periodic_updates_keep_the_guests_of_a_resize_to_confirm(api):
    """The source keeps its guest while the resize waits for its confirm
    (the instance's host is the destination): the computes' periodic
    update destroys no guest of a move in progress, and the revert finds
    the source's guest."""
    uuid = api.boot()
    source = _host(api, uuid)
    assert _resize(api, uuid).status_code == 202
    _verify(api, uuid)
    dest = _host(api, uuid)
    for host in (source, dest):
        api.cloud.computes[host]._update_resources()
        assert uuid in api.cloud.computes[host].driver.list_instances()
    response = api.action(uuid, {'revertResize': None})
    assert response.status_code == 202, response.text
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == source
    _wait_status(api, uuid, 'reverted')
    # Once reverted, the destination's copy is gone and stays gone.
    api.cloud.computes[dest]._update_resources()
    assert uuid not in api.cloud.computes[dest].driver.list_instances()
    assert uuid in api.cloud.computes[source].driver.list_instances()


def test_migrate_without_and_with_host(api):
    uuid = api.boot()
    source = _host(api, uuid)
    # Admin only by default.
    assert api.action(uuid, {'migrate': None}).status_code == 403
    response = api.action(uuid, {'migrate': None}, who=ADMIN)
    assert response.status_code == 202, response.text
    server = _verify(api, uuid)
    first = server['OS-EXT-SRV-ATTR:host']
    assert first != source
    assert api.migration(uuid)['migration_type'] == 'migration'
    assert api.action(uuid, {'confirmResize': None}).status_code == 204
    api.wait(uuid, 'ACTIVE')
    _wait_status(api, uuid, 'confirmed')
    # 2.56: to a chosen host.
    target = sorted(set(api.cloud.host_names()) - {first})[0]
    response = api.action(
        uuid, {'migrate': {'host': target}}, who=ADMIN, version='2.56'
    )
    assert response.status_code == 202, response.text
    server = _verify(api, uuid)
    assert server['OS-EXT-SRV-ATTR:host'] == target
    # The host is refused below 2.56 (schema), and the own host, and an
    # unknown one.
    assert (
        api.action(uuid, {'migrate': {'host': target}}, who=ADMIN).status_code
        == 400
    )
    assert api.action(uuid, {'confirmResize': None}).status_code == 204
    api.wait(uuid, 'ACTIVE')
    for host in (target, 'no-such-host'):
        response = api.action(
            uuid, {'migrate': {'host': host}}, who=ADMIN, version='2.56'
        )
        assert response.status_code == 400, response.text


def test_refused_resizes(api):
    uuid = api.boot()
    # Same flavor; a smaller disk; an unknown flavor.
    assert _resize(api, uuid, api.flavor).status_code == 400
    assert _resize(api, uuid, api.small_disk).status_code == 400
    response = api.action(uuid, {'resize': {'flavorRef': 'nope'}})
    assert response.status_code == 400
    # Not resized: nothing to confirm or revert.
    assert api.action(uuid, {'confirmResize': None}).status_code == 400
    # Over the project's cores quota (one core used, one more asked).
    quota = {'quota_set': {'cores': 1}}
    response = api.call('PUT', '/os-quota-sets/p1', quota, ADMIN)
    assert response.status_code == 200, response.text
    response = _resize(api, uuid)
    assert response.status_code == 403
    assert response.json()['forbidden']['message'] == (
        'Quota exceeded for cores: Requested 1, but already used 1 of 1 cores'
    )
    quota = {'quota_set': {'cores': -1}}
    response = api.call('PUT', '/os-quota-sets/p1', quota, ADMIN)
    assert response.status_code == 200, response.text
    # Locked: 409 for the owner.
    assert api.action(uuid, {'lock': None}).status_code == 202
    response = _resize(api, uuid)
    assert response.status_code == 409
    assert 'locked' in response.json()['conflictingRequest']['message']
    assert api.action(uuid, {'unlock': None}).status_code == 202
    # Wrong state: paused.
    assert api.action(uuid, {'pause': None}).status_code == 202
    api.wait(uuid, 'PAUSED')
    response = _resize(api, uuid)
    assert response.status_code == 409
    assert (
        'vm_state paused' in response.json()['conflictingRequest']['message']
    )
    assert api.migrations(uuid) == []


def test_resize_of_a_stopped_server_stays_stopped(api):
    uuid = api.boot()
    assert api.action(uuid, {'os-stop': None}).status_code == 202
    api.wait(uuid, 'SHUTOFF')
    assert _resize(api, uuid).status_code == 202
    server = _verify(api, uuid)
    assert server['OS-EXT-STS:power_state'] == 4
    # The destination defined the guest and never started it (no boot
    # log, no start), as a stopped server's disk is never booted.
    driver = api.cloud.computes[server['OS-EXT-SRV-ATTR:host']].driver
    console = driver.get_console_output(uuid)
    assert 'defined, not started' in console
    assert 'booted' not in console
    assert driver.power_state(uuid) == 4
    assert api.action(uuid, {'confirmResize': None}).status_code == 204
    server, _ = api.wait(uuid, 'SHUTOFF')
    # It starts on its new host (its first boot there).
    assert api.action(uuid, {'os-start': None}).status_code == 202
    api.wait(uuid, 'ACTIVE')
    assert driver.power_state(uuid) == 1
    assert 'power on' in driver.get_console_output(uuid)


def test_auto_confirm_after_the_window(make_cloud):
    api = MoveApi(
        make_cloud(
            hosts=2, overrides={'DEFAULT': {'resize_confirm_window': 1}}
        )
    )
    uuid = api.boot()
    assert _resize(api, uuid).status_code == 202
    # VERIFY_RESIZE, then ACTIVE with no confirmResize from the user.
    server, seen = api.wait(uuid, 'ACTIVE')
    assert ('VERIFY_RESIZE', None) in seen or api.migration(uuid)[
        'status'
    ] in ('confirming', 'confirmed')
    _wait_status(api, uuid, 'confirmed')
    assert api.allocations(api.migration(uuid)['uuid']) == {}
    assert server['flavor']['vcpus'] == 2
    events = api.events(uuid, {'confirmResize': ['compute_confirm_resize']})
    assert events['confirmResize'] == {'compute_confirm_resize': 'Success'}


def _fail_prep(api, hosts, times):
    """The fake hypervisor of ``hosts`` refuses the next ``times`` preps
    (as a destination that cannot take the guest)."""
    left = [times]

    for host in hosts:
        driver = api.cloud.computes[host].driver

        def refuse(instance_uuid, flavor, host=host):
            if left[0] > 0:
                left[0] -= 1
                raise RuntimeError('%s cannot take the guest' % host)

        driver.prep_resize = refuse
    return left


def test_failed_prep_goes_to_the_next_alternate(api):
    uuid = api.boot()
    source = _host(api, uuid)
    others = sorted(set(api.cloud.host_names()) - {source})
    left = _fail_prep(api, others, 1)
    assert api.action(uuid, {'migrate': None}, who=ADMIN).status_code == 202
    server = _verify(api, uuid)
    assert left == [0]
    dest = server['OS-EXT-SRV-ATTR:host']
    assert dest in others
    migration = api.migration(uuid)
    assert migration['status'] == 'finished'
    assert migration['dest_compute'] == dest
    assert list(api.hosts_of(uuid)) == [dest]
    assert list(api.hosts_of(migration['uuid'])) == [source]


def test_failed_prep_with_no_alternate_left(api):
    uuid = api.boot()
    source = _host(api, uuid)
    before = api.hosts_of(uuid)
    others = sorted(set(api.cloud.host_names()) - {source})
    _fail_prep(api, others, 10)
    response = api.action(
        uuid, {'migrate': {'host': others[0]}}, who=ADMIN, version='2.56'
    )
    assert response.status_code == 202
    _wait_status(api, uuid, 'error')
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == source
    # The fault is kept (shown by Nova's API only for ERROR servers).
    assert 'No valid host' in api.fault(uuid)
    migration = api.migration(uuid)
    assert api.allocations(migration['uuid']) == {}
    assert api.hosts_of(uuid) == before
    events = api.events(uuid, {'migrate': ['compute_prep_resize']})
    assert events['migrate']['compute_prep_resize'] == 'Error'


def test_resize_to_the_same_host_only_when_allowed(make_cloud):
    api = MoveApi(make_cloud(hosts=1))
    uuid = api.boot()
    assert _resize(api, uuid).status_code == 202
    # One host and the source is ignored: no valid host, the server stays.
    _wait_status(api, uuid, 'error')
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['flavor']['vcpus'] == 1
    events = api.events(uuid, {'resize': ['conductor_migrate_server']})
    assert events['resize']['conductor_migrate_server'] == 'Error'


def test_resize_to_the_same_host_when_allowed(make_cloud):
    api = MoveApi(
        make_cloud(
            hosts=1, overrides={'DEFAULT': {'allow_resize_to_same_host': True}}
        )
    )
    uuid = api.boot()
    host = _host(api, uuid)
    assert _resize(api, uuid).status_code == 202
    server = _verify(api, uuid)
    assert server['OS-EXT-SRV-ATTR:host'] == host
    migration = api.migration(uuid)
    assert list(api.hosts_of(migration['uuid'])) == [host]
    assert api.action(uuid, {'revertResize': None}).status_code == 202
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['flavor']['vcpus'] == 1
    assert server['OS-EXT-SRV-ATTR:host'] == host
    _wait_status(api, uuid, 'reverted')
    assert api.hosts_of(uuid) == {
        host: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
    }


def test_a_source_that_cannot_power_off_ends_in_error(api):
    uuid = api.boot()
    source = _host(api, uuid)
    driver = api.cloud.computes[source].driver

    def broken(instance_uuid):
        raise RuntimeError('the hypervisor of %s hangs' % source)

    driver.power_off = broken
    assert _resize(api, uuid).status_code == 202
    server, _ = api.wait(uuid, 'ERROR')
    assert server['OS-EXT-SRV-ATTR:host'] == source
    _wait_status(api, uuid, 'error')
    assert api.allocations(api.migration(uuid)['uuid']) == {}
    assert list(api.hosts_of(uuid)) == [source]
    events = api.events(uuid, {'resize': ['compute_resize_instance']})
    assert events['resize']['compute_resize_instance'] == 'Error'
