"""A resize and a cold migrate that carry the server to another cell
(issue 24): the in-process cloud with two compute cells (cell1: one
host, cell2: two), the policy ``compute:servers:resize:cross_cell``
allowed to admins, so a move of the server on cell1's only host can go
nowhere but cell2. Each test checks where the instance record is (which
cell, hidden or not, the instance mapping), the migration records of
both cells, the guests on the hypervisors and placement's allocations of
the instance and of the migration consumer."""

import pytest
import sqlalchemy as sa

from nimbus.common import db as common_db
from nimbus.db import cell_migrations
from nimbus.db import instance_mappings
from nimbus.db.api import models as api_models
from nimbus.db.cell import models as cell_models
from tests.functional.test_server_actions import ADMIN
from tests.functional.test_server_resize import MoveApi

SOURCE = 'host-1'
POLICY = '"compute:servers:resize:cross_cell": "rule:admin_api"\n'


class CrossCellApi(MoveApi):
    def db(self, name):
        return common_db.get_database(self.cloud.db_urls[name])

    def rows(self, cell, uuid):
        """The instance rows of ``uuid`` in ``cell``: [(hidden, vm_state,
        host)]."""
        with self.db(cell).session() as session:
            return [
                (r.hidden, r.vm_state, r.host)
                for r in session.execute(
                    sa.select(cell_models.Instance).where(
                        cell_models.Instance.uuid == uuid,
                        cell_models.Instance.deleted.is_(False),
                    )
                ).scalars()
            ]

    def migrations_in(self, cell, uuid):
        with self.db(cell).session() as session:
            return cell_migrations.for_instance(session, uuid)

    def mapped_cell(self, uuid):
        with self.db('api').session() as session:
            mapping = instance_mappings.get(session, uuid)
            return session.execute(
                sa.select(api_models.CellMapping.name).where(
                    api_models.CellMapping.id == mapping.cell_id
                )
            ).scalar()

    def guests(self, host):
        return self.cloud.computes[host].driver.list_instances()

    def boot_on_source(self):
        response = self.call(
            'POST',
            '/servers',
            {
                'server': {
                    'name': 'vm',
                    'flavorRef': self.flavor['id'],
                    'imageRef': self.image['id'],
                    'networks': 'none',
                    'host': SOURCE,
                }
            },
            ADMIN,
            version='2.74',
        )
        assert response.status_code == 202, response.text
        uuid = response.json()['server']['id']
        self.wait(uuid, 'ACTIVE')
        assert self.mapped_cell(uuid) == 'cell1'
        return uuid

    def assert_confirmed(self, uuid, dest, migration, vm_state='active'):
        """The end of a confirmed cross-cell move: the server's one record
        in cell2 on ``dest`` (mapped there, listed once), the source's
        copy and guest gone, the migration confirmed and its consumer
        without allocations, placement holding the server on ``dest``."""
        assert self.mapped_cell(uuid) == 'cell2'
        assert self.rows('cell2', uuid) == [(False, vm_state, dest)]
        assert self.rows('cell1', uuid) == []
        assert self.migrations_in('cell2', uuid)[0]['status'] == 'confirmed'
        assert self.allocations(migration) == {}
        assert list(self.hosts_of(uuid)) == [dest]
        assert uuid not in self.guests(SOURCE)
        assert uuid in self.guests(dest)
        assert len(self.listed(uuid)) == 1

    def assert_reverted(self, uuid, before, migration, vm_state='active'):
        """The end of a reverted cross-cell move: the server back in
        cell1 on the source with the allocations it had ``before``, one
        reverted migration record there and nothing of it in cell2 (no
        record, migration or guest), the migration consumer empty."""
        assert self.mapped_cell(uuid) == 'cell1'
        assert self.rows('cell1', uuid) == [(False, vm_state, SOURCE)]
        assert self.rows('cell2', uuid) == []
        assert self.migrations_in('cell2', uuid) == []
        (record,) = self.migrations_in('cell1', uuid)
        assert (record['status'], record['hidden']) == ('reverted', False)
        assert self.hosts_of(uuid) == before
        assert self.allocations(migration) == {}
        assert uuid in self.guests(SOURCE)
        for host in self.cloud.cell2_host_names():
            assert uuid not in self.guests(host)
        assert len(self.listed(uuid)) == 1

    def assert_revert_recorded(self, uuid):
        """The revert's events succeeded and the resize's, which the
        target cell recorded, came back with the server."""
        events = self.events(
            uuid,
            {
                'revertResize': [
                    'compute_revert_snapshot_based_resize_at_dest',
                    'compute_finish_revert_snapshot_based_resize_at_source',
                ]
            },
        )
        assert set(events['revertResize'].values()) == {'Success'}
        assert events['resize']['compute_finish_snapshot_based_resize_at_dest']

    def listed(self, uuid):
        response = self.call(
            'GET', '/servers/detail?all_tenants=1', None, ADMIN
        )
        assert response.status_code == 200, response.text
        return [s for s in response.json()['servers'] if s['id'] == uuid]

    def os_migrations(self, uuid):
        response = self.call(
            'GET',
            '/os-migrations?instance_uuid=%s' % uuid,
            None,
            ADMIN,
            version='2.59',
        )
        assert response.status_code == 200, response.text
        return response.json()['migrations']


def _cloud(make_cloud, tmp_path, allow=True, **groups):
    """A cloud of one cell1 host and two cell2 hosts; ``groups``
    (``{option: value}`` by group) override its options."""
    overrides = dict(groups)
    if allow:
        policy = tmp_path / 'policy.yaml'
        policy.write_text(POLICY)
        overrides['oslo_policy'] = {'policy_file': str(policy)}
    return CrossCellApi(
        make_cloud(hosts=1, cell2_hosts=2, overrides=overrides)
    )


@pytest.fixture
def api(make_cloud, tmp_path):
    return _cloud(make_cloud, tmp_path)


def _resize(api, uuid):
    response = api.action(
        uuid, {'resize': {'flavorRef': api.big['id']}}, who=ADMIN
    )
    assert response.status_code == 202, response.text


def _in_target(api, uuid, kind):
    """The server in VERIFY_RESIZE, carried to cell2; its host."""
    server, _seen = api.wait(uuid, 'VERIFY_RESIZE')
    dest = server['OS-EXT-SRV-ATTR:host']
    # The source's copy ends its part just after the mapping switched.
    _wait_migration(api, uuid, 'finished')
    assert dest in api.cloud.cell2_host_names()
    assert api.mapped_cell(uuid) == 'cell2'
    # The target's copy shows, the source's is hidden (and still there
    # for a revert).
    assert api.rows('cell2', uuid) == [(False, 'resized', dest)]
    assert api.rows('cell1', uuid) == [(True, 'resized', SOURCE)]
    (target,) = api.migrations_in('cell2', uuid)
    (source,) = api.migrations_in('cell1', uuid)
    assert target['uuid'] == source['uuid']
    for record, hidden in ((target, False), (source, True)):
        assert record['cross_cell_move'] is True
        assert record['hidden'] is hidden
        assert record['status'] == 'finished'
        assert record['migration_type'] == kind
        assert record['dest_compute'] == dest
    # Listed once, from the target cell; os-migrations shows one record.
    (listed,) = api.listed(uuid)
    assert listed['status'] == 'VERIFY_RESIZE'
    assert 'hidden' not in listed and 'hidden' not in server
    assert listed['OS-EXT-SRV-ATTR:host'] == dest
    (shown,) = api.os_migrations(uuid)
    assert shown['uuid'] == target['uuid']
    assert shown['status'] == 'finished'
    assert shown['dest_compute'] == dest
    assert shown['source_compute'] == SOURCE
    # Placement: the instance on the destination, the migration consumer
    # on the source (the old flavor).
    assert list(api.hosts_of(uuid)) == [dest]
    assert list(api.hosts_of(target['uuid'])) == [SOURCE]
    # Both guests: the new one running, the old one kept for a revert.
    assert uuid in api.guests(dest)
    assert uuid in api.guests(SOURCE)
    return dest, target['uuid']


def test_resize_to_another_cell_then_confirm(api):
    uuid = api.boot_on_source()
    _resize(api, uuid)
    dest, migration = _in_target(api, uuid, 'resize')
    assert api.show(uuid)['flavor']['vcpus'] == 2
    response = api.action(uuid, {'confirmResize': None}, who=ADMIN)
    assert response.status_code == 204, response.text
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == dest
    assert server['flavor']['vcpus'] == 2
    api.assert_confirmed(uuid, dest, migration)
    events = api.events(
        uuid,
        {'confirmResize': ['compute_confirm_snapshot_based_resize_at_source']},
    )
    assert events['resize'] == {
        'conductor_migrate_server': 'Success',
        'compute_prep_snapshot_based_resize_at_dest': 'Success',
        'compute_prep_snapshot_based_resize_at_source': 'Success',
        'compute_finish_snapshot_based_resize_at_dest': 'Success',
    }


def test_resize_to_another_cell_then_revert(api):
    uuid = api.boot_on_source()
    before = api.hosts_of(uuid)
    _resize(api, uuid)
    dest, migration = _in_target(api, uuid, 'resize')
    response = api.action(uuid, {'revertResize': None}, who=ADMIN)
    assert response.status_code == 202, response.text
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == SOURCE
    assert server['flavor']['vcpus'] == 1
    api.assert_reverted(uuid, before, migration)
    api.assert_revert_recorded(uuid)


def test_cold_migrate_to_another_cell(api):
    uuid = api.boot_on_source()
    response = api.action(uuid, {'migrate': None}, who=ADMIN)
    assert response.status_code == 202, response.text
    dest, migration = _in_target(api, uuid, 'migration')
    assert api.show(uuid)['flavor']['vcpus'] == 1
    response = api.action(uuid, {'confirmResize': None}, who=ADMIN)
    assert response.status_code == 204, response.text
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == dest
    api.assert_confirmed(uuid, dest, migration)


def _refuse_spawn(api):
    for host in api.cloud.cell2_host_names():
        driver = api.cloud.computes[host].driver

        def refuse(
            instance, allocations, accel_info=None, power_on=True, host=host
        ):
            raise RuntimeError('%s cannot spawn the guest' % host)

        driver.spawn = refuse


def _wait_migration(api, uuid, status):
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = api.migrations_in('cell1', uuid)
        if found and found[-1]['status'] == status:
            return found[-1]
        time.sleep(0.05)
    raise AssertionError(api.migrations_in('cell1', uuid))


def test_a_failure_on_the_target_compute_rolls_back(api):
    uuid = api.boot_on_source()
    before = api.hosts_of(uuid)
    _refuse_spawn(api)
    _resize(api, uuid)
    record = _wait_migration(api, uuid, 'error')
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == SOURCE
    assert server['flavor']['vcpus'] == 1
    assert api.mapped_cell(uuid) == 'cell1'
    assert api.rows('cell1', uuid) == [(False, 'active', SOURCE)]
    assert api.rows('cell2', uuid) == []
    assert api.migrations_in('cell2', uuid) == []
    assert record['cross_cell_move'] is True
    assert record['hidden'] is False
    assert api.hosts_of(uuid) == before
    assert api.allocations(record['uuid']) == {}
    assert 'cannot spawn the guest' in api.fault(uuid)
    assert 'undone' in api.fault(uuid)
    # The source's guest runs again; no guest left in cell2.
    assert uuid in api.guests(SOURCE)
    assert server['OS-EXT-STS:power_state'] == 1  # running again
    for host in api.cloud.cell2_host_names():
        assert uuid not in api.guests(host)
    events = api.events(
        uuid, {'resize': ['compute_finish_snapshot_based_resize_at_dest']}
    )
    assert (
        events['resize']['compute_finish_snapshot_based_resize_at_dest']
        == 'Error'
    )
    assert len(api.listed(uuid)) == 1


def test_a_refused_prep_on_the_target_rolls_back(api):
    """The destination's check fails before the source let the guest go:
    nothing was powered off, the copies in cell2 are gone."""
    uuid = api.boot_on_source()
    before = api.hosts_of(uuid)
    for host in api.cloud.cell2_host_names():

        def refuse(instance_uuid, flavor, host=host):
            raise RuntimeError('%s cannot take the guest' % host)

        api.cloud.computes[host].driver.prep_resize = refuse
    response = api.action(uuid, {'migrate': None}, who=ADMIN)
    assert response.status_code == 202, response.text
    record = _wait_migration(api, uuid, 'error')
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == SOURCE
    assert server['OS-EXT-STS:power_state'] == 1
    assert api.rows('cell1', uuid) == [(False, 'active', SOURCE)]
    assert api.rows('cell2', uuid) == []
    assert api.migrations_in('cell2', uuid) == []
    assert api.hosts_of(uuid) == before
    assert api.allocations(record['uuid']) == {}
    assert 'cannot take the guest' in api.fault(uuid)
    events = api.events(
        uuid, {'migrate': ['compute_prep_snapshot_based_resize_at_dest']}
    )
    assert (
        events['migrate']['compute_prep_snapshot_based_resize_at_dest']
        == 'Error'
    )
    assert (
        'compute_prep_snapshot_based_resize_at_source'
        not in (events['migrate'])
    )


def test_without_the_policy_the_move_stays_in_its_cell(make_cloud, tmp_path):
    api = _cloud(make_cloud, tmp_path, allow=False)
    uuid = api.boot_on_source()
    before = api.hosts_of(uuid)
    _resize(api, uuid)
    record = _wait_migration(api, uuid, 'error')
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == SOURCE
    assert record['cross_cell_move'] is False
    assert api.mapped_cell(uuid) == 'cell1'
    assert api.rows('cell2', uuid) == []
    assert 'No valid host' in api.fault(uuid) or 'no host' in api.fault(uuid)
    assert api.hosts_of(uuid) == before
